// Package botocoretest holds the botocore judge: a test that calls every
// action the lab's AWS API implements (EC2, ELB, ELBv2, STS) with
// botocore, the library under the AWS CLI, and holds each answer to
// botocore's own service model (the newest on the machine): the raw XML
// element by element against the operation's output shape (no unknown
// element, scalars of their type, enum values within the enum), the
// parsed answer again (required members, types), and each error code to
// the ones the service documents. judge.py does the checking; the Go test
// starts the lab, sends it the cases and reports each one's problems.
package botocoretest
