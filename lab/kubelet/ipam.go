package kubelet

import (
	"fmt"
	"net/netip"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmlab/ccmlab/internal/ippool"
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
	mu sync.Mutex
	// addrs is the current prefix's cursor pool (nil before the first
	// allocation); byIP is the truth about who holds what, including
	// addresses outside the current prefix.
	addrs *ippool.Pool
	byIP  map[netip.Addr]types.UID
	byUID map[types.UID]netip.Addr
}

func newIPPool() *ipPool {
	return &ipPool{byIP: map[netip.Addr]types.UID{}, byUID: map[types.UID]netip.Addr{}}
}

// Pod addresses skip the network address and .1 (the CNI bridge or VPC
// router on a real node) and the broadcast address.
const (
	podReservedLow  = 2
	podReservedHigh = 1
)

// adopt records addr as uid's, for IPs read back from the API after a
// restart. It reports false when a different Pod already holds addr.
func (p *ipPool) adopt(uid types.UID, addr netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if owner, ok := p.byIP[addr]; ok {
		return owner == uid
	}
	if old, ok := p.byUID[uid]; ok {
		p.forget(old)
	}
	p.take(uid, addr)
	return true
}

// take records addr as uid's and, if it is in the current prefix, as used
// there.
func (p *ipPool) take(uid types.UID, addr netip.Addr) {
	p.byIP[addr] = uid
	p.byUID[uid] = addr
	if p.addrs != nil && p.addrs.Contains(addr) {
		_ = p.addrs.Reserve(addr) // cannot fail: byIP said it was free
	}
}

func (p *ipPool) forget(addr netip.Addr) {
	delete(p.byIP, addr)
	if p.addrs != nil {
		p.addrs.Release(addr)
	}
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
	var fresh *ippool.Pool
	if p.addrs == nil || p.addrs.Prefix() != prefix.Masked() {
		var err error
		if fresh, err = ippool.New(prefix, podReservedLow, podReservedHigh); err != nil {
			return netip.Addr{}, fmt.Errorf("pod CIDR %s: want an IPv4 prefix of /30 or shorter", prefix)
		}
	}
	if !exists() {
		return netip.Addr{}, errPodGone
	}
	if fresh != nil {
		// A new prefix (first Pod, or the Node was re-registered): the
		// cursor starts over, and addresses Pods still hold stay taken.
		p.addrs = fresh
		for a := range p.byIP {
			if fresh.Contains(a) {
				_ = fresh.Reserve(a)
			}
		}
	}
	a, ok := p.addrs.Allocate()
	if !ok {
		return netip.Addr{}, fmt.Errorf("pod CIDR %s has no free address left", prefix)
	}
	p.byIP[a] = uid
	p.byUID[uid] = a
	return a, nil
}

// release frees whatever uid holds; releasing twice is harmless.
func (p *ipPool) release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byUID[uid]; ok {
		delete(p.byUID, uid)
		p.forget(a)
	}
}

func (p *ipPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byUID)
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
	upper := ippool.FromUint32(ippool.ToUint32(half.Addr()) | 1<<(32-half.Bits()))
	return netip.PrefixFrom(upper, half.Bits()), nil
}
