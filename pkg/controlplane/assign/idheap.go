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
	pos    []int32 // per id: index in ids, kept up to date by Swap and Push
	before func(a, b forwarding.ServerID) bool
}

func (h *idHeap) Len() int           { return len(h.ids) }
func (h *idHeap) Less(i, j int) bool { return h.before(h.ids[i], h.ids[j]) }
func (h *idHeap) Swap(i, j int) {
	h.ids[i], h.ids[j] = h.ids[j], h.ids[i]
	h.pos[h.ids[i]], h.pos[h.ids[j]] = int32(i), int32(j)
}
func (h *idHeap) Push(x any) {
	id := x.(forwarding.ServerID)
	h.pos[id] = int32(len(h.ids))
	h.ids = append(h.ids, id)
}
func (h *idHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}

func (h *idHeap) init() {
	h.pos = make([]int32, idSpace)
	for i, id := range h.ids {
		h.pos[id] = int32(i)
	}
	heap.Init(h)
}

func (h *idHeap) top() forwarding.ServerID { return h.ids[0] }

// settle restores the order after id's key changed, dropping id when done
// reports it no longer belongs in the queue.
func (h *idHeap) settle(id forwarding.ServerID, done bool) {
	if done {
		heap.Remove(h, int(h.pos[id]))
	} else {
		heap.Fix(h, int(h.pos[id]))
	}
}
