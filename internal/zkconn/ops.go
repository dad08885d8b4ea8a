package zkconn

import (
	"errors"
	"strings"
	"unique"

	"github.com/go-zookeeper/zk"
)

// full applies the chroot to p.
func (s *Session) full(p string) string {
	if s.chroot == "" {
		return p
	}
	if p == "/" {
		return s.chroot
	}
	return s.chroot + p
}

// fullKept is full for a path kept while a watch or a hook follows the
// node: interned (package unique), so that go-zookeeper's watch entry and
// the node's hook share one copy of it. A member follows the owner node
// of each partition it holds; a second copy of each path cost it about
// 80 bytes per node.
func (s *Session) fullKept(p string) string {
	return unique.Make(s.full(p)).Value()
}

// strip removes the chroot from a path ZooKeeper returned.
func (s *Session) strip(p string) string { return stripChroot(s.chroot, p) }

// stripChroot removes chroot from p.
func stripChroot(chroot, p string) string {
	if chroot == "" {
		return p
	}
	if p == chroot {
		return "/"
	}
	return strings.TrimPrefix(p, chroot)
}

// answered reports whether err (nil or a ZooKeeper error code) means the
// server replied.
func answered(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists),
		errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNotEmpty),
		errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return true
	}
	return false
}

// note records, when err says the server answered, that the request sent
// at sent (Session.now) was answered: see answeredAt.
func (s *Session) note(sent int64, err error) {
	if answered(err) {
		s.answeredAt(sent)
	}
}

// capped is a read of the node at full (chroot included) whose reply the
// cap applies to (data or children): it waits for the connection, refuses
// a node already known to be over the cap, notes the answer, and turns a
// reply over the cap into ErrReplyTooLarge. read runs the request on
// s.conn; ch is its watch channel (nil without a watch), as go-zookeeper
// gives it.
func capped[T any](s *Session, full string, read func(full string) (T, *zk.Stat, <-chan zk.Event, error)) (v T, st *zk.Stat, ch <-chan zk.Event, err error) {
	sent, err := s.await()
	if err != nil {
		return v, nil, nil, err
	}
	if err := s.replies.refused(full); err != nil {
		return v, nil, nil, err
	}
	v, st, ch, err = read(full)
	s.note(sent, err)
	return v, st, ch, s.replies.overCap(full, err)
}

// Get reads a node.
func (s *Session) Get(p string) ([]byte, *zk.Stat, error) {
	b, st, _, err := capped(s, s.full(p), func(full string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
		b, st, err := s.conn.Get(full)
		return b, st, nil, err
	})
	return b, st, err
}

// GetW reads a node and sets a data watch.
func (s *Session) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	b, st, ch, err := capped(s, s.full(p), func(full string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
		return s.conn.GetW(full)
	})
	return b, st, ch, err
}

// Exists reports whether a node exists.
func (s *Session) Exists(p string) (bool, *zk.Stat, error) {
	sent, err := s.await()
	if err != nil {
		return false, nil, err
	}
	ok, st, err := s.conn.Exists(s.full(p))
	s.note(sent, err)
	return ok, st, err
}

// ExistsW reports whether a node exists and sets a watch for its creation,
// change or deletion.
func (s *Session) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	sent, err := s.await()
	if err != nil {
		return false, nil, nil, err
	}
	ok, st, ch, err := s.conn.ExistsW(s.full(p))
	s.note(sent, err)
	return ok, st, ch, err
}

// Children lists a node's children.
func (s *Session) Children(p string) ([]string, *zk.Stat, error) {
	c, st, _, err := capped(s, s.full(p), func(full string) ([]string, *zk.Stat, <-chan zk.Event, error) {
		c, st, err := s.conn.Children(full)
		return c, st, nil, err
	})
	return c, st, err
}

// ChildrenW lists a node's children and sets a child watch.
func (s *Session) ChildrenW(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	c, st, ch, err := capped(s, s.full(p), func(full string) ([]string, *zk.Stat, <-chan zk.Event, error) {
		return s.conn.ChildrenW(full)
	})
	return c, st, ch, err
}

// Set writes a node's data if its version matches (-1: any version).
func (s *Session) Set(p string, data []byte, version int32) (*zk.Stat, error) {
	sent, err := s.await()
	if err != nil {
		return nil, err
	}
	st, err := s.conn.Set(s.full(p), data, version)
	s.note(sent, err)
	return st, err
}

// Create creates a node with the given flags and ACL (nil: the session's
// ACL) and returns its path without the chroot.
func (s *Session) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	sent, err := s.await()
	if err != nil {
		return "", err
	}
	if acl == nil {
		acl = s.acl
	}
	out, err := s.conn.Create(s.full(p), data, flags, acl)
	s.note(sent, err)
	return s.strip(out), err
}

// Delete deletes a node if its version matches (-1: any version).
func (s *Session) Delete(p string, version int32) error {
	sent, err := s.await()
	if err != nil {
		return err
	}
	err = s.conn.Delete(s.full(p), version)
	s.note(sent, err)
	return err
}

// Multi runs ops as one transaction: all of them or none. ops are
// *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest and
// *zk.CheckVersionRequest with paths without the chroot (Multi adds it to
// a copy); a CreateRequest without an ACL gets the session's. On failure
// the failing op's response carries its error. Paths in the responses
// lose the chroot.
func (s *Session) Multi(ops ...any) ([]zk.MultiResponse, error) {
	full := make([]any, len(ops))
	for i, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			c := *o
			c.Path = s.full(c.Path)
			if c.Acl == nil {
				c.Acl = s.acl
			}
			full[i] = &c
		case *zk.SetDataRequest:
			c := *o
			c.Path = s.full(c.Path)
			full[i] = &c
		case *zk.DeleteRequest:
			c := *o
			c.Path = s.full(c.Path)
			full[i] = &c
		case *zk.CheckVersionRequest:
			c := *o
			c.Path = s.full(c.Path)
			full[i] = &c
		default:
			full[i] = op // go-zookeeper refuses it
		}
	}
	sent, err := s.await()
	if err != nil {
		return nil, err
	}
	res, err := s.conn.Multi(full...)
	s.note(sent, err)
	for i := range res {
		if res[i].String != "" {
			res[i].String = s.strip(res[i].String)
		}
	}
	return res, err
}

// CreateParents creates every missing persistent node on the way to p
// (p itself included), with the session's ACL. The chroot is created too.
func (s *Session) CreateParents(p string) error {
	sent, err := s.await()
	if err != nil {
		return err
	}
	full := s.full(p)
	parts := strings.Split(strings.Trim(full, "/"), "/")
	cur := ""
	for _, part := range parts {
		if part == "" {
			continue
		}
		cur += "/" + part
		ok, _, err := s.conn.Exists(cur)
		s.note(sent, err)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		_, err = s.conn.Create(cur, nil, 0, s.acl)
		s.note(sent, err)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// GetACL reads a node's ACL.
func (s *Session) GetACL(p string) ([]zk.ACL, *zk.Stat, error) {
	sent, err := s.await()
	if err != nil {
		return nil, nil, err
	}
	full := s.full(p)
	if err := s.replies.refused(full); err != nil {
		return nil, nil, err
	}
	acl, st, err := s.conn.GetACL(full)
	s.note(sent, err)
	return acl, st, s.replies.overCap(full, err)
}
