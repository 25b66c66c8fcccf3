package check

// extraCases are the table cases of the kinds in checks_extra.go (a
// passing and a failing one for each).
func extraCases() []checkCase { return lifecycleCases() } // checks_lifecycle_test.go
