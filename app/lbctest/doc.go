// Package lbctest tests the lbc add-on on the lab `ccmlab serve --addons
// lbc` builds: the real AWS Load Balancer Controller as the Pod of its
// Deployment, its webhooks through the lab's cluster network and its AWS
// calls to the lab's AWS API.
package lbctest
