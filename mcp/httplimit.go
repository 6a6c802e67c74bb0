package mcp

import (
	"crypto/sha256"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter is a token bucket per access token.
type limiter struct {
	r rate.Limit
	b int

	mu sync.Mutex
	m  map[[32]byte]*rate.Limiter
}

// maxLimited bounds the tokens the limiter remembers (it forgets them all
// past it: a fresh bucket is full, so no token is refused for it).
const maxLimited = 10000

func newLimiter(perSecond float64, burst int) *limiter {
	return &limiter{r: rate.Limit(perSecond), b: burst, m: map[[32]byte]*rate.Limiter{}}
}

// allow takes one request of token's bucket, or says how long to wait.
func (l *limiter) allow(token string) (time.Duration, bool) {
	k := tokenKey(token)
	l.mu.Lock()
	lim := l.m[k]
	if lim == nil {
		if len(l.m) >= maxLimited {
			clear(l.m)
		}
		lim = rate.NewLimiter(l.r, l.b)
		l.m[k] = lim
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d, false
	}
	return 0, true
}

// tokenKey is what the rate limiter knows a token by.
func tokenKey(token string) [32]byte { return sha256.Sum256([]byte(token)) }
