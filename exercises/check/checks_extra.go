package check

// extraKinds is where check kinds added after the evidence engine go
// (kept apart so additions do not touch the engine's tables). An evidence
// kind sets evidence: true and reads e.hist (the history after
// Input.Since).
func extraKinds() map[string]checkKind { return lifecycleKinds() } // checks_lifecycle.go

// extraAnswerKinds is the same for answer kinds.
func extraAnswerKinds() map[string]answerKind { return lifecycleAnswerKinds() }
