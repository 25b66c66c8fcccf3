package ippool

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Pool hands out the addresses of one IPv4 prefix between a reserved low
// and high end. It is not safe for concurrent use: its owners already hold
// a lock around the state the addresses belong to.
type Pool struct {
	prefix      netip.Prefix
	first, last uint32 // usable range, inclusive
	next        uint32
	used        map[uint32]struct{}
}

// New returns an empty pool over prefix that never hands out its lowest
// reservedLow nor its highest reservedHigh addresses (the network address,
// a router, the broadcast address...). It fails unless prefix is IPv4 and
// leaves at least one usable address.
func New(prefix netip.Prefix, reservedLow, reservedHigh uint32) (*Pool, error) {
	if !prefix.IsValid() || !prefix.Addr().Is4() {
		return nil, fmt.Errorf("%s is not an IPv4 prefix", prefix)
	}
	prefix = prefix.Masked()
	size := uint64(1) << (32 - prefix.Bits())
	if uint64(reservedLow)+uint64(reservedHigh) >= size {
		return nil, fmt.Errorf("%s has no usable address once %d low and %d high ones are reserved", prefix, reservedLow, reservedHigh)
	}
	base := ToUint32(prefix.Addr())
	first := base + reservedLow
	return &Pool{
		prefix: prefix,
		first:  first,
		last:   uint32(uint64(base) + size - 1 - uint64(reservedHigh)),
		next:   first,
		used:   map[uint32]struct{}{},
	}, nil
}

// Prefix is the pool's prefix.
func (p *Pool) Prefix() netip.Prefix { return p.prefix }

// Contains reports whether a is in the usable range.
func (p *Pool) Contains(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	u := ToUint32(a)
	return u >= p.first && u <= p.last
}

// Allocate takes the next free address after the last one handed out. It
// reports false when every usable address is taken.
func (p *Pool) Allocate() (netip.Addr, bool) {
	for range uint64(p.last-p.first) + 1 {
		a := p.next
		if p.next == p.last {
			p.next = p.first
		} else {
			p.next++
		}
		if _, taken := p.used[a]; !taken {
			p.used[a] = struct{}{}
			return FromUint32(a), true
		}
	}
	return netip.Addr{}, false
}

// Reserve marks a as taken without moving the cursor, for addresses read
// back after a restart. It fails for an address outside the usable range or
// already taken.
func (p *Pool) Reserve(a netip.Addr) error {
	if !a.Is4() {
		return fmt.Errorf("%s is not an IPv4 address", a)
	}
	if !p.Contains(a) {
		return fmt.Errorf("%s is outside the usable range of %s", a, p.prefix)
	}
	u := ToUint32(a)
	if _, taken := p.used[u]; taken {
		return fmt.Errorf("%s is used twice", a)
	}
	p.used[u] = struct{}{}
	return nil
}

// Release frees a; releasing a free or foreign address does nothing.
func (p *Pool) Release(a netip.Addr) {
	if a.Is4() {
		delete(p.used, ToUint32(a))
	}
}

// Used is how many addresses are taken.
func (p *Pool) Used() int { return len(p.used) }

// ToUint32 is an IPv4 address as a number, for address arithmetic.
func ToUint32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// FromUint32 is the IPv4 address of a number.
func FromUint32(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}
