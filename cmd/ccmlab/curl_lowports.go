package main

import (
	"context"

	"github.com/ccmlab/ccmlab/lab/dataplane/lowports"
	"github.com/ccmlab/ccmlab/lab/dataplane/outside"
)

// newLowPorts is the low-port mode when --lb-addresses asks for it (nil
// otherwise), checked before the lab starts: a machine that cannot bind
// low ports or has only 127.0.0.1 on loopback gets a clear refusal, not
// a lab without what was asked. It watches the lab through its own API
// at addr, as ccmlab curl does.
func newLowPorts(o *serveOptions, addr string) (*lowports.Mode, error) {
	if !o.lbAddresses {
		return nil, nil
	}
	lf := labFile{URL: "http://" + addr, Token: o.token}
	m, err := lowports.New(lowports.Config{
		Source: func(ctx context.Context) (outside.View, error) { return labView(ctx, lf) },
	})
	if err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return m, nil
}
