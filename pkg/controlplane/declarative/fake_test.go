package declarative

import (
	"context"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// fakeOperator keeps instances in memory and records every request, so
// tests can count them. Removed servers stay "removing" until finish().
type fakeOperator struct {
	views    map[string]*controller.View
	requests []controller.Request
}

func newFake() *fakeOperator { return &fakeOperator{views: map[string]*controller.View{}} }

func (f *fakeOperator) Instances(context.Context) ([]string, error) {
	var out []string
	for n := range f.views {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

func (f *fakeOperator) Show(_ context.Context, name string) (*controller.View, error) {
	v, ok := f.views[name]
	if !ok {
		return nil, fmt.Errorf("no instance %q", name)
	}
	c := *v
	c.DIPs = slices.Clone(v.DIPs)
	if c.Instance.Cheetah != nil { // as controller.Show redacts
		ch := *c.Instance.Cheetah
		ch.Keys = cookie.Keys{}
		c.Instance.Cheetah = &ch
	}
	return &c, nil
}

func (f *fakeOperator) dip(v *controller.View, id forwarding.ServerID) *controller.DIPView {
	for i := range v.DIPs {
		if v.DIPs[i].ID == id {
			return &v.DIPs[i]
		}
	}
	return nil
}

func (f *fakeOperator) Submit(_ context.Context, r controller.Request) (string, error) {
	f.requests = append(f.requests, r)
	v := f.views[r.Instance]
	if r.Op != controller.OpCreateInstance && v == nil {
		return "", fmt.Errorf("no instance %q", r.Instance)
	}
	switch r.Op {
	case controller.OpCreateInstance:
		if v != nil {
			return "", fmt.Errorf("instance %q exists", r.Instance)
		}
		if err := controller.CheckInstance(r.Config); err != nil {
			return "", err
		}
		f.views[r.Instance] = &controller.View{View: ctlstrategy.View{Instance: *r.Config}}
	case controller.OpDeleteInstance:
		delete(f.views, r.Instance)
	case controller.OpAddDIP:
		for _, d := range r.DIPs {
			if f.dip(v, d.ID) != nil {
				return "", fmt.Errorf("server id %d is already used", d.ID)
			}
			v.DIPs = append(v.DIPs, controller.DIPView{DIP: controller.DIP{ID: d.ID, Addr: d.Addr, Weight: d.Weight, State: controller.Active}})
		}
	case controller.OpRemoveDIP:
		for _, id := range r.IDs {
			f.dip(v, id).State = controller.Removing
		}
	case controller.OpSetWeight:
		f.dip(v, r.ID).Weight = r.Weight
	case controller.OpDrain, controller.OpUndrain:
		f.dip(v, r.ID).Drained = r.Op == controller.OpDrain
	default:
		return "", fmt.Errorf("fake: op %s", r.Op)
	}
	return "", nil
}

// finish ends every removal (the chain windows are over).
func (f *fakeOperator) finish() {
	for _, v := range f.views {
		v.DIPs = slices.DeleteFunc(v.DIPs, func(d controller.DIPView) bool { return d.State == controller.Removing })
	}
}

func (f *fakeOperator) ops() []string {
	var out []string
	for _, r := range f.requests {
		out = append(out, r.Op)
	}
	return out
}
