//go:build !unix

package main

import "time"

// selfCPU returns 0: the process's CPU time is read on Unix only.
func selfCPU() time.Duration { return 0 }
