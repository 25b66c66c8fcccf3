package cloud

import (
	"errors"
	"fmt"
)

// Error codes. They are the codes AWS returns for the same situation, so that
// what students see in the call log matches what they would see in CloudTrail
// or in an SDK error.
const (
	ErrAccessDenied     = "AccessDenied"
	ErrThrottling       = "Throttling"
	ErrInstanceNotFound = "InvalidInstanceID.NotFound"
	ErrLBNotFound       = "LoadBalancerNotFound"
	ErrDuplicateLB      = "DuplicateLoadBalancerName"
	ErrInvalidParameter = "InvalidParameterValue"
	ErrValidation       = "ValidationError"
	ErrRouteNotFound    = "InvalidRoute.NotFound"
	ErrRouteExists      = "RouteAlreadyExists"
	ErrInvalidTarget    = "InvalidTarget"
	ErrInjected         = "InternalFailure"
	// ErrIncorrectState: e.g. starting a terminated instance.
	ErrIncorrectState = "IncorrectInstanceState"
	// ErrOperationNotPermitted: e.g. terminating an instance whose
	// termination protection (DisableApiTermination) is on.
	ErrOperationNotPermitted = "OperationNotPermitted"
	// ErrNoAddresses: the zone's subnet (or the LB pool in ip mode) is full.
	ErrNoAddresses = "InsufficientFreeAddressesInSubnet"
	// ErrCanceled: the caller's context ended while the call was held in step
	// mode or sleeping for injected latency; the call changed nothing.
	ErrCanceled = "RequestCanceled"
)

// Error is the one error type every API call returns, so callers (the CCM
// adapter in particular) can branch on Code with errors.As or IsCode.
type Error struct {
	Code    string `json:"code"`
	Action  string `json:"action"`
	Message string `json:"message"`
	// cause keeps context.Canceled / DeadlineExceeded reachable via errors.Is.
	cause error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func (e *Error) Unwrap() error { return e.cause }

// IsCode reports whether err is (or wraps) an *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// errorf builds an *Error without an Action; the call pipeline fills the
// Action in, so validation helpers need not know which call they serve.
func errorf(code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// message is err without its code, for wrapping into other messages.
func message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
