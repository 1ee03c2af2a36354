package main

import (
	"fmt"

	"github.com/usherhq/usher/internal/ticket"
)

func (m *Main) keys(args []string) error {
	if len(args) == 0 || args[0] != "new" {
		fmt.Fprint(m.Stderr, "Usage: usher keys new [--id ID]\n")
		return errUsage
	}
	fs := m.flags("keys new", "keys new [--id ID]")
	id := fs.String("id", "", "the key id (default: k followed by the date)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *id == "" {
		*id = "k" + nowFunc().UTC().Format("20060102")
	}
	k, err := ticket.GenerateKey(*id)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, `# Add to the keys list of the config. The first key seals new tickets;
# keep older keys after it until their tickets have expired.
keys:
  - id: %s
    secret: %s
`, k.ID, ticket.EncodeSecret(k.Secret))
	return nil
}
