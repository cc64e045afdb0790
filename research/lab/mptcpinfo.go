package lab

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MPTCP socket options (linux/mptcp.h).
const (
	solMPTCP     = 284
	mptcpInfo    = 1 // struct mptcp_info
	mptcpTCPInfo = 2 // struct mptcp_subflow_data + one struct tcp_info per subflow
)

// subflowState is what the client knows about its MPTCP connection's
// subflows.
type subflowState struct {
	established    int // subflows in TCP_ESTABLISHED, the initial one included
	pending        int // additional subflows the path manager counts (open or opening)
	addAddrAccepts int // ADD_ADDRs from the server the client acted on
}

// readSubflows reads the subflow state of an MPTCP socket.
func readSubflows(c *net.TCPConn) (subflowState, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return subflowState{}, err
	}
	var st subflowState
	var serr error
	err = rc.Control(func(fd uintptr) {
		// struct mptcp_info: u8 subflows, u8 add_addr_signal, u8 add_addr_accepted, …
		info := make([]byte, 64)
		if serr = getsockopt(fd, mptcpInfo, info); serr != nil {
			return
		}
		st.pending, st.addAddrAccepts = int(info[0]), int(info[2])
		// struct mptcp_subflow_data {u32 size_subflow_data, num_subflows,
		// size_kernel, size_user}, then num_subflows records of size_user
		// bytes, each the head of a struct tcp_info (u8 tcpi_state first).
		const head, rec, max = 16, 8, 16
		buf := make([]byte, head+rec*max)
		*(*uint32)(unsafe.Pointer(&buf[0])) = head
		*(*uint32)(unsafe.Pointer(&buf[12])) = rec
		if serr = getsockopt(fd, mptcpTCPInfo, buf); serr != nil {
			return
		}
		n := int(*(*uint32)(unsafe.Pointer(&buf[4])))
		for i := 0; i < min(n, max); i++ {
			if buf[head+i*rec] == 1 /* TCP_ESTABLISHED */ {
				st.established++
			}
		}
	})
	if err == nil {
		err = serr
	}
	return st, err
}

func getsockopt(fd uintptr, opt int, buf []byte) error {
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, solMPTCP, uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return syscall.Errno(e)
	}
	return nil
}
