package dpbench

import (
	"errors"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// progRunAttr is the BPF_PROG_TEST_RUN part of union bpf_attr. cilium/ebpf
// runs programs but does not return the kernel's own duration with a
// context, and the per-packet method needs exactly that: the time the
// kernel measured around one run, without the system call around it.
type progRunAttr struct {
	progFd, retval, dataSizeIn, dataSizeOut uint32
	dataIn, dataOut                         uint64
	repeat, duration, ctxSizeIn, ctxSizeOut uint32
	ctxIn, ctxOut                           uint64
	flags, cpu, batchSize, _                uint32
}

// runTest runs the program repeat times on data (with ctx, if any) in one
// test run and returns its last action and the kernel-reported time per
// run in whole ns (the kernel divides its total by repeat). The kernel's
// clock stops while the loop yields the CPU to other tasks, so on a busy
// machine this is the program's time, not the queue's.
func runTest(fd int, data, ctx []byte, repeat uint32) (uint32, uint32, error) {
	attr := progRunAttr{progFd: uint32(fd), dataSizeIn: uint32(len(data)), dataIn: uint64(uintptr(unsafe.Pointer(&data[0]))), repeat: repeat}
	if len(ctx) > 0 {
		attr.ctxSizeIn, attr.ctxIn = uint32(len(ctx)), uint64(uintptr(unsafe.Pointer(&ctx[0])))
	}
	for {
		_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
		runtime.KeepAlive(data)
		runtime.KeepAlive(ctx)
		if errno == 0 {
			return attr.retval, attr.duration, nil
		}
		// A signal (on a busy machine, often the Go runtime's own
		// preemption signal) stopped the loop part way: run again. The
		// path counters then moved by more than the runs asked for, so
		// trial.delta measures the whole step again (interrupted).
		if !errors.Is(errno, unix.EINTR) {
			return 0, 0, errno
		}
		interrupted.Add(1)
	}
}

// interrupted counts the test runs a signal stopped part way (runTest).
var interrupted atomic.Uint64
