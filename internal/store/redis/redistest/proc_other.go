//go:build !linux

package redistest

import "syscall"

// sysProcAttr has nothing to add off Linux: servers are killed by the
// tests' cleanup only.
func sysProcAttr() *syscall.SysProcAttr { return nil }
