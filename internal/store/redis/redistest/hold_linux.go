package redistest

import "syscall"

// holdPort binds a TCP socket to the loopback port without listening on
// it: nothing else can take the port, and a client that dials it is
// refused at once, as when nothing holds it. release undoes it.
func holdPort(port int) (release func(), err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return func() { syscall.Close(fd) }, nil
}
