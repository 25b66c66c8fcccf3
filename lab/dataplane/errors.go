package dataplane

import (
	"errors"
	"fmt"
)

// Reasons a request could not be sent at all.
const (
	ReasonInvalid      = "Invalid"             // the Request itself is malformed
	ReasonNotSynced    = "NotSynced"           // Run has not synced yet
	ReasonUnknownLB    = "UnknownLoadBalancer" // no load balancer with that name, DNS name or IP
	ReasonNoListener   = "NoSuchListener"      // the load balancer has no listener on that port
	ReasonUnknownNode  = "UnknownNode"         // no Node with that name or IP
	ReasonNoNodePort   = "NoSuchNodePort"      // no Service has that NodePort
	ReasonNoClusterIP  = "NoSuchService"       // no Service has that ClusterIP and port
	ReasonNotListening = "NotListening"        // TCP listener of a load balancer that is going away
)

// RequestError says why Do could not send a request: the input names
// something that does not exist. A request that was sent but failed on the
// way (no healthy target, no endpoints, dropped) is not an error: it is a
// Trace whose Status and Error say what happened, because that failure is
// the lesson.
type RequestError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (e *RequestError) Error() string { return "dataplane: " + e.Message }

// IsReason reports whether err is (or wraps) a *RequestError with reason.
func IsReason(err error, reason string) bool {
	var e *RequestError
	return errors.As(err, &e) && e.Reason == reason
}

func requestErrorf(reason, format string, args ...any) error {
	return &RequestError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}
