package probe

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// peek is run by closedWhileIdle through syscall.RawConn.Read: a recv(2)
// with MSG_PEEK|MSG_DONTWAIT takes nothing off the socket and tells whether
// the peer has sent a FIN (0 bytes) or reset the connection (an error other
// than EAGAIN), as Go's net/http's background read of idle connections would
// have seen. It returns true so that RawConn.Read never waits. (The raw
// system call: unix.Recvfrom allocates its address buffer.)
func (c *probeConn) peek(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.peekBuf[0])), uintptr(len(c.peekBuf)),
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0:
		c.peekDead = n == 0
	case unix.EAGAIN, unix.EINTR:
		c.peekDead = false
	default:
		c.peekDead = true
	}
	return true
}
