package lowports

import (
	"net"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// maxDNSMessage bounds a query read and an answer written (UDP's
// classic 512 bytes are enough for one A record; EDNS0 is not spoken).
const maxDNSMessage = 512

// serveDNS answers each query on pc until it is closed: one question,
// class IN; A for the lab's names, an empty answer for their other
// types, NXDOMAIN for every other name; the lab's server is
// authoritative for its own names and recurses for nothing.
func (m *Mode) serveDNS(pc net.PacketConn) {
	buf := make([]byte, maxDNSMessage)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if out, ok := m.answer(buf[:n]); ok {
			_, _ = pc.WriteTo(out, from)
		}
	}
}

func (m *Mode) answer(q []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil, false
	}
	qs, err := p.AllQuestions()
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, Authoritative: true}
	if err != nil || len(qs) != 1 || h.OpCode != 0 {
		rh.RCode = dnsmessage.RCodeFormatError
		b := dnsmessage.NewBuilder(make([]byte, 0, maxDNSMessage), rh)
		out, err := b.Finish()
		return out, err == nil
	}
	question := qs[0]
	name := strings.ToLower(strings.TrimSuffix(question.Name.String(), "."))
	addrs, known := m.resolve(name)
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, maxDNSMessage), rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(question) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if known && question.Type == dnsmessage.TypeA && question.Class == dnsmessage.ClassINET {
		for _, a := range addrs {
			// A short TTL: load balancers come and go.
			rr := dnsmessage.ResourceHeader{Name: question.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60}
			if b.AResource(rr, dnsmessage.AResource{A: a.As4()}) != nil {
				return nil, false
			}
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
