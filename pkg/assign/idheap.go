package assign

import (
	"container/heap"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// idHeap is a priority queue of server ids ordered by a caller-given
// comparison, used to find the most overloaded and most underloaded server
// in O(log n) per step of the greedy loop.
type idHeap struct {
	ids    []forwarding.ServerID
	before func(a, b forwarding.ServerID) bool
}

func (h *idHeap) Len() int           { return len(h.ids) }
func (h *idHeap) Less(i, j int) bool { return h.before(h.ids[i], h.ids[j]) }
func (h *idHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *idHeap) Push(x any)         { h.ids = append(h.ids, x.(forwarding.ServerID)) }
func (h *idHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}

func (h *idHeap) init() { heap.Init(h) }

func (h *idHeap) top() forwarding.ServerID { return h.ids[0] }

// settle restores the order after the top's key changed, dropping the top
// when done reports it no longer belongs in the queue.
func (h *idHeap) settle(done bool) {
	if done {
		heap.Pop(h)
	} else {
		heap.Fix(h, 0)
	}
}
