package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// addRetry bounds how long AddMember waits for etcd to count the members
// as running (etcd's health interval is 5 s).
const addRetry = 12 * time.Second

// Member is one member of the etcd cluster, as etcd's member list says.
type Member struct {
	ID         uint64
	Name       string // empty until an added member first starts
	PeerURLs   []string
	ClientURLs []string // empty until the member first starts
}

// HexID is the member's ID as etcd prints it (RemoveMember takes it).
func (m Member) HexID() string { return strconv.FormatUint(m.ID, 16) }

// Started tells whether the member has run since it was added.
func (m Member) Started() bool { return m.Name != "" }

// Members lists the cluster's members (etcd's member API).
func (s *Store) Members(ctx context.Context) ([]Member, error) {
	r, err := s.cli.MemberList(ctx)
	if err != nil {
		return nil, wrap("member list", "", err)
	}
	return members(r.Members), nil
}

func members(in []*etcdserverpb.Member) []Member {
	out := make([]Member, 0, len(in))
	for _, m := range in {
		out = append(out, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs})
	}
	return out
}

// AddMember adds a member named name, reached by the others at peer
// (HOST:PORT, or a URL; without a scheme, the one the members use), to the
// cluster; the new member then starts with Join and the returned
// initial-cluster list. etcd refuses the addition when it would leave the
// cluster without a quorum of running members (a dead member is removed
// first).
func (s *Store) AddMember(ctx context.Context, name, peer string) (initialCluster string, err error) {
	if name == "" || strings.ContainsAny(name, "=,") {
		return "", fmt.Errorf("etcdstore: member name %q: want a name without = or ,", name)
	}
	old, err := s.Members(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range old {
		if m.Name == name {
			return "", fmt.Errorf("etcdstore: the cluster already has a member named %s (remove it first)", name)
		}
	}
	if !strings.Contains(peer, "://") {
		scheme := "https"
		if len(old) > 0 && len(old[0].PeerURLs) > 0 && strings.HasPrefix(old[0].PeerURLs[0], "http://") {
			scheme = "http"
		}
		peer = scheme + "://" + peer
	}
	if _, rest, _ := strings.Cut(peer, "://"); rest == "" {
		return "", fmt.Errorf("etcdstore: peer URL %q: want HOST:PORT", peer)
	} else if _, _, err := net.SplitHostPort(strings.TrimSuffix(rest, "/")); err != nil {
		return "", fmt.Errorf("etcdstore: peer URL %q: %w", peer, err)
	}
	r, err := s.cli.MemberAdd(ctx, []string{peer})
	// etcd counts a member as running once it has been connected for 5 s:
	// just after a start or a removal it refuses, so try again a while.
	for wait := time.Now().Add(addRetry); errors.Is(err, rpctypes.ErrUnhealthy) && time.Now().Before(wait); {
		select {
		case <-ctx.Done():
			return "", wrap("member add", name, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
		r, err = s.cli.MemberAdd(ctx, []string{peer})
	}
	if errors.Is(err, rpctypes.ErrUnhealthy) {
		return "", fmt.Errorf("etcdstore: member add %s: %w (etcd adds a member only while the members already there would still have a quorum running: start the stopped ones or remove the dead ones first)", name, err)
	}
	if err != nil {
		return "", wrap("member add", name, err)
	}
	var list []string
	for _, m := range r.Members {
		n := m.Name
		if m.ID == r.Member.ID {
			n = name
		}
		if n == "" {
			continue // another added member that never started
		}
		for _, u := range m.PeerURLs {
			list = append(list, n+"="+u)
		}
	}
	slices.Sort(list) // by name: the same list whichever member answered
	return strings.Join(list, ","), nil
}

// RemoveMember removes the member named nameOrID (its name, its ID in
// hexadecimal as Members shows it, or its peer address: an added member
// that never started has no name) from the cluster.
func (s *Store) RemoveMember(ctx context.Context, nameOrID string) (Member, error) {
	ms, err := s.Members(ctx)
	if err != nil {
		return Member{}, err
	}
	id, idErr := strconv.ParseUint(nameOrID, 16, 64)
	peer := func(m Member) bool {
		for _, u := range m.PeerURLs {
			if u == nameOrID || strings.HasSuffix(u, "://"+nameOrID) {
				return true
			}
		}
		return false
	}
	// A name wins over another member's ID or address.
	for _, match := range []func(Member) bool{
		func(m Member) bool { return m.Name == nameOrID },
		func(m Member) bool { return (idErr == nil && m.ID == id) || peer(m) },
	} {
		for _, m := range ms {
			if match(m) {
				if _, err := s.cli.MemberRemove(ctx, m.ID); err != nil {
					return Member{}, wrap("member remove", nameOrID, err)
				}
				return m, nil
			}
		}
	}
	return Member{}, fmt.Errorf("etcdstore: no member named %s", nameOrID)
}
