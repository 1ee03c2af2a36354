package selfbench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestProcCPUFine: a process's CPU reads to well under a clock tick, so a
// few milliseconds of work show (in /proc/<pid>/stat's ticks of 10 ms
// they read 0 or 10 ms).
func TestProcCPUFine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	before := procCPU(pid)
	spin := time.Now()
	for time.Since(spin) < 3*time.Millisecond {
	}
	d := procCPU(pid) - before
	if d <= 0 || d%(10*time.Millisecond) == 0 {
		t.Fatalf("3 ms of spinning read as %v of CPU: not finer than a tick", d)
	}
}
