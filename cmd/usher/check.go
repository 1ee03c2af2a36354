package main

import (
	"errors"
	"fmt"

	"github.com/usherhq/usher/internal/config"
)

func (m *Main) check(args []string) error {
	fs := m.flags("check", "check --config FILE")
	path := fs.String("config", "usher.yaml", "the config file to check")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return configError(*path, err)
	}
	fmt.Fprintf(m.Stdout, "%s is valid.\n\n", *path)
	return cfg.Explain(m.Stdout)
}

// configError presents a config problem list under the file's name.
func configError(path string, err error) error {
	var v *config.ValidationError
	if errors.As(err, &v) {
		return fmt.Errorf("%s is not valid:\n%w", path, err)
	}
	return err
}
