package hub_test

import "syscall"

// setReceiveBuffer sets a socket's receive buffer (SO_RCVBUF).
func setReceiveBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
