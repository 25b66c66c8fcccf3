package awsapi

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"sync"

	"github.com/ccmlab/ccmlab/internal/datafs"
)

// Account is the lab's AWS account ID: the one lab/cloud's ARNs carry
// (awsAccount in lab/cloud/aws_elbv2.go; TestIdentityAccount keeps the two
// equal).
const Account = "000000000000"

// StudentCaller is the call log's name for the student's key, the one in
// <data-dir>/aws.env: the exercises look for "aws-cli" as the evidence of a
// change made by hand.
const StudentCaller = "aws-cli"

// Credentials are an access key: what a client signs with.
type Credentials struct {
	AccessKeyID     string `json:"AccessKeyId"`
	SecretAccessKey string `json:"SecretAccessKey"`
}

// Identity is who signed a request, shaped like the userIdentity of a
// CloudTrail record for an IAM user: every key of the lab belongs to an
// IAM user of the lab's account named after its caller
// (arn:aws:iam::000000000000:user/service-controller). Caller is what the
// call log shows.
type Identity struct {
	Type        string // always "IAMUser"
	Caller      string // the user name; the call log's caller
	ARN         string
	AccountID   string
	AccessKeyID string
}

// callerRe keeps callers plain names: the user name of an ARN and a word
// of the call log.
var callerRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Keys is the lab's key store: one access key per caller. The student's
// key is kept in the data dir (LoadStudentKey), so a shell that sourced
// aws.env keeps working across restarts; every other key is made at start
// and lives only in memory, so nothing a student can read names the
// controllers' secrets.
type Keys struct {
	mu       sync.Mutex
	byID     map[string]key
	byCaller map[string]Credentials
}

type key struct {
	secret   string
	identity Identity
}

// NewKeys makes an empty store.
func NewKeys() *Keys {
	return &Keys{byID: map[string]key{}, byCaller: map[string]Credentials{}}
}

// Issue returns caller's key, making one the first time: a lab caller
// (a controller, an add-on) asks for it when it starts, and gets the same
// key when it starts again.
func (k *Keys) Issue(caller string) (Credentials, error) {
	if !callerRe.MatchString(caller) {
		return Credentials{}, fmt.Errorf("awsapi: caller %q: want a lowercase name of letters, digits and hyphens", caller)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.byCaller[caller]; ok {
		return c, nil
	}
	c := newCredentials()
	k.addLocked(caller, c)
	return c, nil
}

// Add gives caller the key c (the student's, read from the data dir).
func (k *Keys) Add(caller string, c Credentials) error {
	if !callerRe.MatchString(caller) {
		return fmt.Errorf("awsapi: caller %q: want a lowercase name of letters, digits and hyphens", caller)
	}
	if err := c.validate(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.byCaller[caller]; ok && old != c {
		return fmt.Errorf("awsapi: caller %q already has a key", caller)
	}
	if other, ok := k.byID[c.AccessKeyID]; ok && other.identity.Caller != caller {
		return fmt.Errorf("awsapi: access key %s is %s's", c.AccessKeyID, other.identity.Caller)
	}
	k.addLocked(caller, c)
	return nil
}

func (k *Keys) addLocked(caller string, c Credentials) {
	k.byCaller[caller] = c
	k.byID[c.AccessKeyID] = key{secret: c.SecretAccessKey, identity: Identity{
		Type: "IAMUser", Caller: caller, ARN: "arn:aws:iam::" + Account + ":user/" + caller,
		AccountID: Account, AccessKeyID: c.AccessKeyID,
	}}
}

// lookup returns the secret and identity of an access key ID.
func (k *Keys) lookup(accessKeyID string) (secret string, id Identity, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.byID[accessKeyID]
	return e.secret, e.identity, ok
}

// Access key IDs look like AWS's long-term keys (AKIA and 16 characters
// of base32's alphabet); secrets are 40 characters of base64, as AWS's.
var (
	accessKeyIDRe = regexp.MustCompile(`^AKIA[A-Z2-7]{16}$`)
	secretRe      = regexp.MustCompile(`^[A-Za-z0-9+/]{40}$`)
)

func newCredentials() Credentials {
	var id [10]byte
	var secret [30]byte
	// crypto/rand.Read never fails (it crashes the program instead).
	_, _ = rand.Read(id[:])
	_, _ = rand.Read(secret[:])
	return Credentials{
		AccessKeyID:     "AKIA" + base32.StdEncoding.EncodeToString(id[:]),
		SecretAccessKey: base64.StdEncoding.EncodeToString(secret[:]),
	}
}

func (c Credentials) validate() error {
	if !accessKeyIDRe.MatchString(c.AccessKeyID) || !secretRe.MatchString(c.SecretAccessKey) {
		return errors.New("awsapi: an access key is AKIA and 16 characters A-Z 2-7, its secret 40 characters of base64")
	}
	return nil
}

// LoadStudentKey reads the student's key from path, or makes one and
// writes it there (through files) the first time. A file that is there but
// not a key is an error: the lab does not replace a key a student may be
// using without saying so.
func LoadStudentKey(path string, files datafs.Writer) (Credentials, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		var c Credentials
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return Credentials{}, fmt.Errorf("awsapi: %s is not the lab's AWS key (%v); delete it and the lab makes a new one", path, err)
		}
		if err := c.validate(); err != nil {
			return Credentials{}, fmt.Errorf("%w (%s); delete it and the lab makes a new one", err, path)
		}
		return c, nil
	case errors.Is(err, fs.ErrNotExist):
		c := newCredentials()
		err := files.WriteFileAtomic(path, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		})
		if err != nil {
			return Credentials{}, fmt.Errorf("awsapi: write the student's AWS key: %w", err)
		}
		return c, nil
	default:
		return Credentials{}, fmt.Errorf("awsapi: read the student's AWS key: %w", err)
	}
}
