//go:build unix

package redistest

import "syscall"

// Pause stops the server's process (SIGSTOP): it keeps its connections
// but answers nothing, as a server stalled by the machine would, until
// Resume. Pause on a stopped server does nothing.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}
