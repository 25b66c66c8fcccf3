package check

// extraCases are the table cases of the kinds in checks_extra.go (a
// passing and a failing one for each).
func extraCases() []checkCase {
	cases := append(append(lifecycleCases(), awsCases()...), subnetsCases()...) // checks_lifecycle_test.go, checks_aws_test.go, checks_subnets_test.go
	cases = append(cases, ipTargetCases()...)                                   // checks_iptargets_test.go
	cases = append(cases, ccmpodCases()...)                                     // checks_ccmpod_test.go
	cases = append(cases, ownerCases()...)                                      // checks_owner_test.go
	return append(cases, kubevirtCases()...)                                    // checks_kubevirt_test.go
}
