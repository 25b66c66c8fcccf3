package check

import "maps"

// extraKinds is where check kinds added after the evidence engine go
// (kept apart so additions do not touch the engine's tables). An evidence
// kind sets evidence: true and reads e.hist (the history after
// Input.Since).
func extraKinds() map[string]checkKind {
	m := lifecycleKinds()         // checks_lifecycle.go
	maps.Copy(m, awsKinds())      // checks_aws.go
	maps.Copy(m, subnetsKinds())  // checks_subnets.go
	maps.Copy(m, ccmpodKinds())   // checks_ccmpod.go
	maps.Copy(m, ipTargetKinds()) // checks_iptargets.go
	maps.Copy(m, kubevirtKinds()) // checks_kubevirt.go
	maps.Copy(m, ownerKinds())    // checks_owner.go
	return m
}

// extraAnswerKinds is the same for answer kinds.
func extraAnswerKinds() map[string]answerKind {
	m := lifecycleAnswerKinds()
	maps.Copy(m, awsAnswerKinds())
	maps.Copy(m, subnetsAnswerKinds())
	maps.Copy(m, ccmpodAnswerKinds())
	maps.Copy(m, kubevirtAnswerKinds())
	return m
}
