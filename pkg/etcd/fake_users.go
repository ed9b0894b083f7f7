package etcd

import (
	"cmp"
	"context"
	"maps"
	"slices"
)

// FakeUser is a user the fake holds.
type FakeUser struct {
	// Password is empty for a user made without one.
	Password string
	Roles    []string
}

// EnsureUser implements Client.
func (f *Fake) EnsureUser(_ context.Context, u User) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("EnsureUser"); err != nil {
		return err
	}
	if u.Name == rootName || u.Role == rootName {
		return ErrRootUser
	}
	if f.users == nil {
		f.users, f.roles = map[string]*FakeUser{}, map[string]map[rangeKey]Access{}
	}
	f.roles[u.Role] = wantedRanges(u.Permissions)
	have, ok := f.users[u.Name]
	switch {
	case !ok:
		have = &FakeUser{Password: u.Password}
		f.users[u.Name] = have
	case u.SetPassword && u.Password != "":
		have.Password = u.Password
	}
	have.Roles = []string{u.Role}
	return nil
}

// DeleteUser implements Client.
func (f *Fake) DeleteUser(_ context.Context, name, role string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("DeleteUser"); err != nil {
		return err
	}
	if name == rootName || role == rootName {
		return ErrRootUser
	}
	delete(f.users, name)
	delete(f.roles, role)
	return nil
}

// AddUser puts a user in the fake as someone else than the operator would:
// with any roles.
func (f *Fake) AddUser(name, password string, roles ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == nil {
		f.users, f.roles = map[string]*FakeUser{}, map[string]map[rangeKey]Access{}
	}
	f.users[name] = &FakeUser{Password: password, Roles: roles}
}

// User is a user of the fake, and whether it exists.
func (f *Fake) User(name string) (FakeUser, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[name]
	if !ok {
		return FakeUser{}, false
	}
	return FakeUser{Password: u.Password, Roles: slices.Clone(u.Roles)}, true
}

// Role is the permissions of a role of the fake, sorted by key, and
// whether it exists.
func (f *Fake) Role(name string) ([]Permission, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.roles[name]
	if !ok {
		return nil, false
	}
	out := make([]Permission, 0, len(r))
	for _, k := range slices.SortedFunc(maps.Keys(r), func(a, b rangeKey) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return cmp.Compare(a.end, b.end)
	}) {
		out = append(out, Permission{Key: k.key, RangeEnd: k.end, Access: r[k]})
	}
	return out, true
}
