package server

import (
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
// everyone out). The zero value is ready; it is safe for concurrent use.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start opens a session for p.
func (ss *sessions) start(p Principal) *session {
	now := time.Now()
	sess := &session{id: randomToken(), principal: p, csrf: randomToken(), expires: now.Add(sessionLife)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byID == nil {
		ss.byID = map[string]*session{}
	}
	for id, old := range ss.byID { // forget the expired ones
		if now.After(old.expires) {
			delete(ss.byID, id)
		}
	}
	ss.byID[sess.id] = sess
	return sess
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
