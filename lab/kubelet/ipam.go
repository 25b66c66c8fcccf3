package kubelet

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ipPool hands out Pod IPs from one IPv4 prefix and remembers which Pod
// (by UID) holds each address. In podCIDR mode every node has its own pool;
// with the vpc-cni profile one pool covers the cluster, because VPC
// addresses are shared by all nodes.
//
// Entries are never dropped when the prefix changes: a Pod keeps the IP its
// sandbox was given, as on a real node, even if the Node was re-registered
// and got a different podCIDR.
type ipPool struct {
	mu     sync.Mutex
	prefix netip.Prefix
	// next is a cursor: walking forward instead of taking the lowest free
	// address keeps a just-released IP from going straight to the next Pod,
	// where a stale Endpoint could still point at it.
	next  uint32
	byIP  map[netip.Addr]types.UID
	byUID map[types.UID]netip.Addr
}

func newIPPool() *ipPool {
	return &ipPool{byIP: map[netip.Addr]types.UID{}, byUID: map[types.UID]netip.Addr{}}
}

// usableRange skips the network address and .1 (the CNI bridge or VPC
// router on a real node) and the broadcast address.
func usableRange(p netip.Prefix) (first, last uint32, ok bool) {
	if !p.Addr().Is4() || p.Bits() > 30 {
		return 0, 0, false
	}
	base := addrToU32(p.Masked().Addr())
	size := uint32(1) << (32 - p.Bits())
	return base + 2, base + size - 2, true
}

// adopt records addr as uid's, for IPs read back from the API after a
// restart. It reports false when a different Pod already holds addr.
func (p *ipPool) adopt(uid types.UID, addr netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if owner, ok := p.byIP[addr]; ok {
		return owner == uid
	}
	if old, ok := p.byUID[uid]; ok {
		delete(p.byIP, old)
	}
	p.byIP[addr] = uid
	p.byUID[uid] = addr
	return true
}

// lookup returns the address uid holds, if any.
func (p *ipPool) lookup(uid types.UID) (netip.Addr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.byUID[uid]
	return a, ok
}

// allocate returns uid's address, giving it a free one from prefix when it
// has none. exists is asked under the pool's lock: a Pod deleted before that
// moment gets nothing, and one deleted after it is released by the delete
// handler, which takes the same lock; so an address can never leak.
func (p *ipPool) allocate(prefix netip.Prefix, uid types.UID, exists func() bool) (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byUID[uid]; ok {
		return a, nil
	}
	first, last, ok := usableRange(prefix)
	if !ok {
		return netip.Addr{}, fmt.Errorf("pod CIDR %s: want an IPv4 prefix of /30 or shorter", prefix)
	}
	if !exists() {
		return netip.Addr{}, errPodGone
	}
	if prefix != p.prefix {
		p.prefix = prefix
		p.next = first
	}
	if p.next < first || p.next > last {
		p.next = first
	}
	for range last - first + 1 {
		a := u32ToAddr(p.next)
		if p.next == last {
			p.next = first
		} else {
			p.next++
		}
		if _, taken := p.byIP[a]; !taken {
			p.byIP[a] = uid
			p.byUID[uid] = a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("pod CIDR %s has no free address left", prefix)
}

// release frees whatever uid holds; releasing twice is harmless.
func (p *ipPool) release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byUID[uid]; ok {
		delete(p.byUID, uid)
		delete(p.byIP, a)
	}
}

func (p *ipPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byUID)
}

func addrToU32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func u32ToAddr(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// vpcPodRange is where the vpc-cni profile takes Pod IPs: the upper half of
// the VPC. The cloud cuts its zone subnets from the start of the VPC in
// blocks of 1/16 (or smaller), so the upper half holds no instance as long
// as there are at most half as many zones as blocks. This mirrors
// lab/cloud's layout; the check makes a change there fail loudly here.
func vpcPodRange(vpcCIDR string, zones int) (netip.Prefix, error) {
	vpc, err := netip.ParsePrefix(vpcCIDR)
	if err != nil || !vpc.Addr().Is4() || vpc.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("VPC CIDR %q: want an IPv4 prefix of /24 or shorter", vpcCIDR)
	}
	bits := 4
	for 1<<bits < zones {
		bits++
	}
	if zones > 1<<(bits-1) {
		return netip.Prefix{}, fmt.Errorf("VPC %s with %d zones: the zone subnets reach into the upper half, which the vpc-cni profile needs for Pod IPs", vpc, zones)
	}
	half := netip.PrefixFrom(vpc.Masked().Addr(), vpc.Bits()+1)
	upper := u32ToAddr(addrToU32(half.Addr()) | 1<<(32-half.Bits()))
	return netip.PrefixFrom(upper, half.Bits()), nil
}
