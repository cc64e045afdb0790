package dpbench

import "github.com/cilium/ebpf/asm"

// xdpReturn is a program that returns the given XDP action.
func xdpReturn(action int32) asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, action), asm.Return()}
}
