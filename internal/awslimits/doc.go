// Package awslimits holds the API request-rate limits AWS documents for
// Amazon EC2 and Elastic Load Balancing, and replays a run's AWS calls
// through them. The lab's AWS API never throttles (a class must not fail
// because of a quota nobody pays for), so a benchmark that counts the
// calls a cluster makes uses this package to say what a real account
// would have refused, and which action first.
//
// Both services throttle per account, per Region and per action with a
// token bucket: a bucket holds up to Capacity tokens, each request takes
// one, and Refill tokens come back every second. The figures and the
// pages they come from are in docs/footprint.md ("The AWS API bill").
package awslimits
