package check

// extraCases are the table cases of the kinds in checks_extra.go (a
// passing and a failing one for each).
func extraCases() []checkCase { return append(lifecycleCases(), awsCases()...) } // checks_lifecycle_test.go, checks_aws_test.go
