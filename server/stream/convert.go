package stream

import (
	"fmt"

	"github.com/ccmlab/ccmlab/lab/flow"
)

// FromFlow turns the observer's change into its typed message. A change of
// a kind this package does not know is an error: the observer and the
// protocol went apart.
func FromFlow(c flow.Change) (Message, error) {
	switch c.Type {
	case flow.KindNode:
		return change[flow.NodeView](c)
	case flow.KindPod:
		return change[flow.PodView](c)
	case flow.KindService:
		return change[flow.ServiceView](c)
	case flow.KindEvent:
		return change[flow.EventView](c)
	case flow.KindServiceFlow:
		return change[flow.ServiceFlow](c)
	case flow.KindNodeFlow:
		return change[flow.NodeFlow](c)
	}
	return nil, fmt.Errorf("stream: flow change of unknown type %q", c.Type)
}

func change[T any](c flow.Change) (Message, error) {
	m := Change[T]{Kind: string(c.Type), Op: string(c.Op), Key: c.Key}
	if c.Data == nil {
		return m, nil
	}
	d, ok := c.Data.(T)
	if !ok {
		return nil, fmt.Errorf("stream: %s change carries %T", c.Type, c.Data)
	}
	m.Data = &d
	return m, nil
}
