package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

const (
	// sessionCookie names the pages' session cookie.
	sessionCookie = "aslrun_session"
	// sessionLife is how long a session lasts after its sign-in.
	sessionLife = 12 * time.Hour
	// DefaultMaxSessions bounds the live sessions of a server
	// (Config.MaxSessions): past it, signing in ends the oldest.
	DefaultMaxSessions = 10000
	// DefaultMaxSessionsPerPrincipal bounds the live sessions of one
	// token's holder (Config.MaxSessionsPerPrincipal): past it, signing
	// in ends the holder's oldest.
	DefaultMaxSessionsPerPrincipal = 16
	// sessionSweepEvery is how often Run forgets the expired sessions.
	sessionSweepEvery = 10 * time.Minute
	// signinCookie names the cookie that holds a browser's sign-in token
	// before it has a session; signinLife is how long it lasts.
	signinCookie = "aslrun_signin"
	signinLife   = time.Hour
)

// session is a signed-in browser: who it is and the token its forms
// carry against cross-site requests.
type session struct {
	id        string
	principal Principal
	csrf      string
	expires   time.Time
}

// sessions are the signed-in browsers, kept in memory (a restart signs
// everyone out): at most max in all and perPrincipal for one principal
// (by name), the oldest ended to make room. The zero value is ready,
// with the default bounds; it is safe for concurrent use.
type sessions struct {
	max, perPrincipal int

	mu   sync.Mutex
	byID map[string]*session
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start opens a session for p, ending the oldest of p's (or of all)
// when p (or the server) has as many as it may.
func (ss *sessions) start(p Principal) *session {
	now := time.Now()
	sess := &session{id: randomToken(), principal: p, csrf: randomToken(), expires: now.Add(sessionLife)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byID == nil {
		ss.byID = map[string]*session{}
	}
	ss.sweepLocked(now)
	limit, perPrincipal := ss.max, ss.perPrincipal
	if limit <= 0 {
		limit = DefaultMaxSessions
	}
	if perPrincipal <= 0 {
		perPrincipal = DefaultMaxSessionsPerPrincipal
	}
	var oldest, oldestOwn *session
	own := 0
	for _, old := range ss.byID {
		if oldest == nil || old.expires.Before(oldest.expires) {
			oldest = old
		}
		if old.principal.Name == p.Name {
			own++
			if oldestOwn == nil || old.expires.Before(oldestOwn.expires) {
				oldestOwn = old
			}
		}
	}
	switch {
	case own >= perPrincipal:
		delete(ss.byID, oldestOwn.id)
	case len(ss.byID) >= limit:
		delete(ss.byID, oldest.id)
	}
	ss.byID[sess.id] = sess
	return sess
}

// sweep forgets the sessions expired at now and says how many are left.
func (ss *sessions) sweep(now time.Time) int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.sweepLocked(now)
	return len(ss.byID)
}

func (ss *sessions) sweepLocked(now time.Time) {
	for id, old := range ss.byID {
		if now.After(old.expires) {
			delete(ss.byID, id)
		}
	}
}

// sweepEvery forgets the expired sessions every interval until ctx ends.
func (ss *sessions) sweepEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ss.sweep(now)
		}
	}
}

// of returns the live session whose id r's cookie carries.
func (ss *sessions) of(r *http.Request) (*session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess, ok := ss.byID[c.Value]
	if !ok || time.Now().After(sess.expires) {
		return nil, false
	}
	return sess, true
}

// end forgets a session.
func (ss *sessions) end(sess *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, sess.id)
}

// validCSRF reports whether the form's token is the session's.
func (sess *session) validCSRF(token string) bool {
	return sess != nil && token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(sess.csrf)) == 1
}

// setSessionCookie gives the browser its session; a nil session clears
// it.
func setSessionCookie(w http.ResponseWriter, r *http.Request, sess *session) {
	c := &http.Cookie{Name: sessionCookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if sess == nil {
		c.MaxAge = -1
	} else {
		c.Value, c.Expires, c.MaxAge = sess.id, sess.expires, int(sessionLife/time.Second)
	}
	http.SetCookie(w, c)
}

// signinToken returns the token the sign-in form carries: the one the
// browser's sign-in cookie holds, or a new one, given to the browser in
// that cookie (double submit: a site that posts the form for a browser
// can neither read the cookie nor set it, so cannot match it).
func signinToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(signinCookie); err == nil && wellFormedToken(c.Value) {
		return c.Value
	}
	tok := randomToken()
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: tok, Path: "/signin", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(signinLife / time.Second)})
	return tok
}

// validSigninToken reports whether the sign-in form's token is the one
// r's sign-in cookie holds.
func validSigninToken(r *http.Request, form string) bool {
	c, err := r.Cookie(signinCookie)
	return err == nil && wellFormedToken(c.Value) && subtle.ConstantTimeCompare([]byte(form), []byte(c.Value)) == 1
}

// clearSigninToken removes the sign-in cookie once it has served.
func clearSigninToken(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Path: "/signin", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
}

// wellFormedToken reports whether s looks like randomToken's: 43
// base64url characters.
func wellFormedToken(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}
