package ops

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// CheckGroupWritable reads the ACLs of the group's nodes that exist
// (/consumers, /consumers/<group> and its ids, owners and offsets) and
// fails, wrapping zk.ErrNoAuth, when none of their entries lets this
// client create children: the nodes were created by a client with other
// credentials (zkgroup's nodes get a creator-only-write ACL when
// credentials are configured). Entries of schemes it cannot evaluate (ip,
// x509, sasl) are taken as granting; ZooKeeper has the last word. creds
// are the digest credentials "user:password" sent, if any. Blocks on
// ZooKeeper.
func CheckGroupWritable(s *zkconn.Session, group string, creds []zkconn.Auth) error {
	var mine []string
	for _, a := range creds {
		if a.Scheme != "digest" {
			continue
		}
		user, pw, ok := strings.Cut(string(a.Credentials), ":")
		if ok {
			mine = append(mine, zk.DigestACL(zk.PermAll, user, pw)[0].ID)
		}
	}
	for _, p := range []string{"/consumers", zkdata.ConsumersPath(group), zkdata.IDsPath(group), zkdata.OwnersPath(group), zkdata.OffsetsPath(group)} {
		acl, _, err := s.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("ops: reading the ACL of %s%s: %w", s.Chroot(), p, err)
		}
		if !grants(acl, mine, zk.PermCreate) {
			who := "this client, which has no credentials"
			if len(mine) > 0 {
				who = "this client (digest user " + strings.SplitN(mine[0], ":", 2)[0] + ")"
			}
			return fmt.Errorf("%w: %s%s may not be written by %s: its ACL is %s", zk.ErrNoAuth, s.Chroot(), p, who, describeACL(acl))
		}
	}
	return nil
}

// grants reports whether an entry of acl gives perm to anyone or to one
// of the digest ids in mine.
func grants(acl []zk.ACL, mine []string, perm int32) bool {
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		switch a.Scheme {
		case "world":
			if a.ID == "anyone" {
				return true
			}
		case "digest":
			for _, id := range mine {
				if a.ID == id {
					return true
				}
			}
		default:
			return true
		}
	}
	return false
}

// describeACL prints an ACL without the digest hashes: "digest:alice
// (all), world:anyone (read)".
func describeACL(acl []zk.ACL) string {
	parts := make([]string, 0, len(acl))
	for _, a := range acl {
		id := a.ID
		if a.Scheme == "digest" {
			id = strings.SplitN(id, ":", 2)[0]
		}
		parts = append(parts, fmt.Sprintf("%s:%s (%s)", a.Scheme, id, permText(a.Perms)))
	}
	return strings.Join(parts, ", ")
}

func permText(p int32) string {
	if p == zk.PermAll {
		return "all"
	}
	var out []string
	for _, x := range []struct {
		bit  int32
		name string
	}{{zk.PermRead, "read"}, {zk.PermWrite, "write"}, {zk.PermCreate, "create"}, {zk.PermDelete, "delete"}, {zk.PermAdmin, "admin"}} {
		if p&x.bit != 0 {
			out = append(out, x.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "+")
}
