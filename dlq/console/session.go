package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// cookieName is the session cookie's name.
const cookieName = "redrive_session"

// maxSessions bounds the sessions kept; beyond it the one closest to
// expiry is dropped (a client that throws its cookies away cannot grow
// the map without end).
const maxSessions = 10000

// session is one login: who, its CSRF token, until when.
type session struct {
	id      string
	csrf    string
	user    User
	expires time.Time
}

// sessions are the console's sessions, in memory: a restart logs everyone
// out.
type sessions struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, max: maxSessions, now: now, byID: map[string]*session{}}
}

// randomToken returns 32 random bytes, URL-safe base64.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for u, forgetting expired ones.
func (s *sessions) create(u User) *session {
	now := s.now()
	ss := &session{id: randomToken(), csrf: randomToken(), user: u, expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest *session
	for id, old := range s.byID {
		switch {
		case now.After(old.expires):
			delete(s.byID, id)
		case oldest == nil || old.expires.Before(oldest.expires):
			oldest = old
		}
	}
	if oldest != nil && len(s.byID) >= s.max {
		delete(s.byID, oldest.id)
	}
	s.byID[ss.id] = ss
	return ss
}

// get returns the live session id, or nil.
func (s *sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[id]
	if ss == nil {
		return nil
	}
	if s.now().After(ss.expires) {
		delete(s.byID, id)
		return nil
	}
	return ss
}

// drop ends session id.
func (s *sessions) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

// checkToken returns the user whose token is tok. Every user's token is
// compared, in constant time, on hashes (equal lengths).
func (c *Console) checkToken(tok string) (User, bool) {
	sum := sha256.Sum256([]byte(tok))
	var found User
	ok := 0
	for _, u := range c.users {
		if subtle.ConstantTimeCompare(sum[:], u.sum[:]) == 1 {
			found, ok = u.User, 1
		}
	}
	return found, ok == 1
}

// validCSRF compares a posted token with the session's in constant time.
func validCSRF(ss *session, posted string) bool {
	a, b := sha256.Sum256([]byte(posted)), sha256.Sum256([]byte(ss.csrf))
	return posted != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
