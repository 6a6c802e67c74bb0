package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Policies: what the hook does before an edit of a file another actor
// claimed.
const (
	// PolicyDeny stops the edit when another actor holds the file
	// exclusively (or by any claim, with DenyShared). The default.
	PolicyDeny = "deny"
	// PolicyClaim denies as PolicyDeny does; when the file is free it
	// first takes a short exclusive claim on it for the agent.
	PolicyClaim = "claim"
	// PolicyWarn lets every edit go, with a note naming the holder.
	PolicyWarn = "warn"
)

// DefaultClaimTTL is how long a claim the hook takes lasts; a later edit
// of the file renews it once less than half is left.
const DefaultClaimTTL = 15 * time.Minute

// PolicyFile is where a repository keeps its hook policy.
var PolicyFile = filepath.Join(".crosscode", "hooks.json")

// Policy is .crosscode/hooks.json.
type Policy struct {
	// Policy is deny (default), claim or warn.
	Policy string `json:"policy,omitempty"`
	// DenyShared also stops edits of files others hold by a shared claim.
	DenyShared bool `json:"denyShared,omitempty"`
	// ClaimTTL is how long a claim of the policy claim lasts (a Go
	// duration such as "15m"; at most 8h).
	ClaimTTL string `json:"claimTTL,omitempty"`

	ttl time.Duration
}

// maxPolicyBytes bounds the policy file.
const maxPolicyBytes = 64 << 10

// LoadPolicy reads the policy file of the worktree top; no file is the
// default policy. override, when set, replaces the file's policy.
func LoadPolicy(top, override string) (*Policy, error) {
	p := &Policy{}
	f, err := os.Open(filepath.Join(top, PolicyFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("policy: %w", err)
	default:
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes+1))
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", PolicyFile, err)
		}
		if len(b) > maxPolicyBytes {
			return nil, fmt.Errorf("policy %s: larger than %d bytes", PolicyFile, maxPolicyBytes)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(p); err != nil {
			return nil, fmt.Errorf("policy %s: %w (fields: policy, denyShared, claimTTL)", PolicyFile, err)
		}
	}
	if override != "" {
		p.Policy = override
	}
	if p.Policy == "" {
		p.Policy = PolicyDeny
	}
	if err := ValidPolicy(p.Policy); err != nil {
		return nil, err
	}
	p.ttl = DefaultClaimTTL
	if p.ClaimTTL != "" {
		d, err := time.ParseDuration(p.ClaimTTL)
		if err != nil || d <= 0 || d > 8*time.Hour {
			return nil, fmt.Errorf("policy %s: claimTTL %q is not a duration between 1s and 8h (e.g. \"15m\")", PolicyFile, p.ClaimTTL)
		}
		p.ttl = d
	}
	return p, nil
}

// ValidPolicy checks a policy name.
func ValidPolicy(name string) error {
	switch name {
	case PolicyDeny, PolicyClaim, PolicyWarn:
		return nil
	}
	return fmt.Errorf("policy %q: use deny, claim or warn", name)
}
