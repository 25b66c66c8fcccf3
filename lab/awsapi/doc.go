// Package awsapi serves the lab's simulated AWS (lab/cloud's AWS model) in
// AWS's own wire protocol, so that unmodified AWS clients can use it: the
// upstream k8s.io/cloud-provider-aws (through aws-sdk-go-v2) and the stock
// AWS CLI.
//
// It speaks the query protocol of three services: EC2 (API version
// 2016-11-15), Elastic Load Balancing (2012-06-01) and Elastic Load
// Balancing v2 (2015-12-01). A request is a form POST to / with Action
// and Version; the service is chosen by Version. Every request's SigV4
// signature is verified with the secret of its access key (sigv4.go), and
// the caller in the call log is the IAM user the key belongs to (keys.go):
// each lab has its own keys, one per caller. The listener is
// loopback-only, and Host headers that are not loopback are refused (421)
// so that a web page rebinding a DNS name to 127.0.0.1 cannot drive the
// cloud.
//
// One codec handles every action: a request's parameters are read into the
// SDK's own input struct and the answer is the SDK's own output struct
// written as XML, both by reflection, with the wire names that
// internal/gennames extracted from the SDK's generated serializers and
// deserializers (names_gen.go). Parameter names are checked against the
// action's input type and values against the characters AWS refuses
// before anything is read. EC2 answers <ActionResponse> with
// lowerCamel elements and <item> list members; ELB and ELBv2 answer
// <ActionResponse><ActionResult> with <member> list members. Errors use
// each service's error XML and AWS's codes, which lab/cloud already
// speaks.
package awsapi
