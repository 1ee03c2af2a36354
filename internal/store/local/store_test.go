package local_test

import (
	"path/filepath"
	"testing"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/store/storetest"
)

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) usher.Store {
		s, err := local.Open(local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) usher.Store {
		s, err := local.Open(local.Options{Path: filepath.Join(t.TempDir(), "usher.db")})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
