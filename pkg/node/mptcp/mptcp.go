// Package mptcp talks to the kernel's MPTCP path manager over generic
// netlink (the "mptcp_pm" family, as `ip mptcp` does). The server agent uses
// it to advertise VIP:server-id to MPTCP clients, so their secondary
// subflows carry the server's id as destination port and the mux can send
// them to the right server without state (Beamer §4.4).
package mptcp

import (
	"fmt"
	"net/netip"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// Constants of include/uapi/linux/mptcp.h (the path manager's netlink API).
const (
	familyName = "mptcp_pm"

	cmdGetAddr = 3
	cmdAddAddr = 1
	cmdDelAddr = 2

	attrAddr = 1 // nested address

	addrAttrFamily = 1
	addrAttrID     = 2
	addrAttrAddr4  = 3
	addrAttrAddr6  = 4
	addrAttrPort   = 5
	addrAttrFlags  = 6
	addrAttrIfIdx  = 7

	// FlagSignal announces the endpoint to peers with ADD_ADDR.
	FlagSignal = 1 << 0

	afInet  = 2
	afInet6 = 10
)

// Endpoint is one path-manager endpoint.
type Endpoint struct {
	ID      uint8
	Addr    netip.Addr
	Port    uint16
	Flags   uint32
	IfIndex int32
}

// Client is a connection to the path manager of the caller's namespace.
type Client struct {
	c      *genetlink.Conn
	family genetlink.Family
}

// Dial opens the path manager.
func Dial() (*Client, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, err
	}
	f, err := c.GetFamily(familyName)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("mptcp path manager: %w (is MPTCP enabled in this kernel?)", err)
	}
	return &Client{c: c, family: f}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

func (c *Client) do(cmd uint8, flags netlink.HeaderFlags, attrs []byte) ([]genetlink.Message, error) {
	msg := genetlink.Message{Header: genetlink.Header{Command: cmd, Version: c.family.Version}, Data: attrs}
	return c.c.Execute(msg, c.family.ID, netlink.Request|flags)
}

func encodeEndpoint(e Endpoint) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(attrAddr, func(n *netlink.AttributeEncoder) error {
		if e.ID != 0 {
			n.Uint8(addrAttrID, e.ID)
		}
		switch { // a family without an address is invalid
		case e.Addr.Is4():
			n.Uint16(addrAttrFamily, afInet)
			a := e.Addr.As4()
			n.Bytes(addrAttrAddr4, a[:])
		case e.Addr.Is6():
			n.Uint16(addrAttrFamily, afInet6)
			a := e.Addr.As16()
			n.Bytes(addrAttrAddr6, a[:])
		}
		if e.Port != 0 {
			n.Uint16(addrAttrPort, e.Port)
		}
		if e.Flags != 0 {
			n.Uint32(addrAttrFlags, e.Flags)
		}
		if e.IfIndex != 0 {
			n.Int32(addrAttrIfIdx, e.IfIndex)
		}
		return nil
	})
	return ae.Encode()
}

// Add adds an endpoint; the kernel picks its id when e.ID is 0.
func (c *Client) Add(e Endpoint) error {
	if !e.Addr.IsValid() || e.Addr.Is4In6() || e.Addr.Zone() != "" {
		return fmt.Errorf("mptcp endpoint %v: want an IPv4 or IPv6 address (not mapped, no zone)", e.Addr)
	}
	b, err := encodeEndpoint(e)
	if err != nil {
		return err
	}
	if _, err := c.do(cmdAddAddr, netlink.Acknowledge, b); err != nil {
		return fmt.Errorf("adding mptcp endpoint %v port %d: %w", e.Addr, e.Port, err)
	}
	return nil
}

// Delete removes the endpoint with the given id.
func (c *Client) Delete(id uint8) error {
	b, err := encodeEndpoint(Endpoint{ID: id})
	if err != nil {
		return err
	}
	if _, err := c.do(cmdDelAddr, netlink.Acknowledge, b); err != nil {
		return fmt.Errorf("deleting mptcp endpoint %d: %w", id, err)
	}
	return nil
}

// List returns every endpoint.
func (c *Client) List() ([]Endpoint, error) {
	msgs, err := c.do(cmdGetAddr, netlink.Dump, nil)
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			return nil, err
		}
		for ad.Next() {
			if ad.Type() != attrAddr {
				continue
			}
			var e Endpoint
			ad.Nested(func(n *netlink.AttributeDecoder) error {
				for n.Next() {
					switch n.Type() {
					case addrAttrID:
						e.ID = n.Uint8()
					case addrAttrAddr4:
						if b := n.Bytes(); len(b) == 4 {
							e.Addr = netip.AddrFrom4([4]byte(b))
						}
					case addrAttrAddr6:
						if b := n.Bytes(); len(b) == 16 {
							e.Addr = netip.AddrFrom16([16]byte(b))
						}
					case addrAttrPort:
						e.Port = n.Uint16()
					case addrAttrFlags:
						e.Flags = n.Uint32()
					case addrAttrIfIdx:
						e.IfIndex = n.Int32()
					}
				}
				return nil
			})
			out = append(out, e)
		}
		if err := ad.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
