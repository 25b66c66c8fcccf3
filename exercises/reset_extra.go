package exercises

import (
	"context"
	"fmt"

	"github.com/ccmlab/ccmlab/exercises/format"
)

// validateResetOptions refuses options an exercise does not take, before
// anything changes. Diagnosis challenges extend it.
func (s *Service) validateResetOptions(ex *format.Exercise, opts ResetOptions) error {
	if ex.ID == MysteryID {
		return validateMysteryCause(opts.Cause) // mystery.go
	}
	if opts.Cause != "" {
		return fmt.Errorf("%w: exercise %s takes no cause", ErrBadInput, ex.ID)
	}
	return nil
}

// extraReset is the part of a reset an exercise kind adds after the lab
// settled (a diagnosis challenge plants its cause here). Call with mu.
func (s *Service) extraReset(ctx context.Context, ex *format.Exercise, opts ResetOptions) error {
	if ex.ID == MysteryID {
		return s.plantMystery(ctx, opts.Cause) // mystery.go
	}
	return nil
}
