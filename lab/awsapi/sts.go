package awsapi

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// ServiceSTS is STS in the call log.
const ServiceSTS = "sts"

// The lab serves one STS action, GetCallerIdentity, the first thing a
// student types to see who the CLI is. Its types are written here rather
// than taken from aws-sdk-go-v2/service/sts, which the lab does not
// otherwise need; the wire names are the ones in the API reference
// (https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html).
type getCallerIdentityInput struct{}

type getCallerIdentityOutput struct {
	Account *string
	Arn     *string
	UserId  *string
}

var stsElements = map[string]string{
	"getCallerIdentityOutput.Account": "Account",
	"getCallerIdentityOutput.Arn":     "Arn",
	"getCallerIdentityOutput.UserId":  "UserId",
}

func (h *Handler) stsActions() []Action {
	return []Action{act(h.getCallerIdentity)}
}

// getCallerIdentity answers who signed: the lab's account and the caller's
// session of the lab's role, the principal the lab's denials name
// (cloud.CallerARN). The user ID of a role session is the role's unique
// ID (AROA...) and the session name; the lab derives the role's from its
// name so it is the same in every lab. AWS answers it even to a caller
// every other action is denied to, so it is not subject to the lab's IAM
// faults.
func (h *Handler) getCallerIdentity(ctx context.Context, _ *getCallerIdentityInput) (*getCallerIdentityOutput, error) {
	caller := cloud.CallerFrom(ctx)
	sum := sha256.Sum256([]byte("ccmlab-ccm"))
	roleID := "AROA" + strings.ToUpper(base32.StdEncoding.EncodeToString(sum[:]))[:17]
	return &getCallerIdentityOutput{
		Account: aws.String(Account),
		Arn:     aws.String(cloud.CallerARN(caller)),
		UserId:  aws.String(roleID + ":" + caller),
	}, nil
}
