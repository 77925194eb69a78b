package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// presence counts the stores sharing the server's keys: each refreshes an
// entry of its own every interval, and the count is the entries seen
// within three intervals. The last count stands while the server does not
// answer.
type presence struct {
	client   Client
	key      string
	id       string
	interval time.Duration
	count    atomic.Int64
	log      *slog.Logger
	failing  bool // the last refresh failed (logged once a streak)
}

func newPresence(client Client, prefix string, interval time.Duration, log *slog.Logger) *presence {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &presence{client: client, key: prefix + "{instances}", id: hex.EncodeToString(b[:]), interval: interval, log: log}
}

// run refreshes the entry every interval until ctx ends.
func (p *presence) run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leave removes the store's entry, so that the other stores count one
// fewer at once.
func (p *presence) leave(ctx context.Context) error {
	cmd := redis.NewIntCmd(ctx, "zrem", p.key, p.id)
	if err := p.client.Process(ctx, cmd); err != nil {
		return classify("redisstore: close", err)
	}
	return nil
}

// refresh marks the store present at the server's time, drops the stores
// not seen for three intervals and reads the count. Plain commands, no
// script: the server's script statistics count the store's decisions
// alone.
func (p *presence) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, p.interval)
	defer cancel()
	n, err := p.mark(ctx)
	if se := noPermission("redisstore: count instances", err); se != nil {
		err = se
	}
	if err != nil || n < 1 {
		if !p.failing && ctx.Err() == nil {
			p.log.LogAttrs(ctx, slog.LevelWarn, "redisstore: cannot count the instances sharing the store; the last count stands",
				slog.Int64("instances", p.count.Load()), slog.String("err", errString(err)))
		}
		p.failing = true
		return
	}
	p.failing = false
	p.count.Store(n)
}

// mark refreshes the store's entry and returns the number of entries.
func (p *presence) mark(ctx context.Context) (int64, error) {
	ttl := 3 * p.interval.Milliseconds()
	tc := redis.NewTimeCmd(ctx, "time")
	if err := p.client.Process(ctx, tc); err != nil {
		return 0, err
	}
	now := tc.Val().UnixMilli()
	for _, cmd := range []redis.Cmder{
		redis.NewIntCmd(ctx, "zadd", p.key, now, p.id),
		redis.NewIntCmd(ctx, "zremrangebyscore", p.key, "-inf", now-ttl),
		redis.NewBoolCmd(ctx, "pexpire", p.key, ttl),
	} {
		if err := p.client.Process(ctx, cmd); err != nil {
			return 0, err
		}
	}
	card := redis.NewIntCmd(ctx, "zcard", p.key)
	err := p.client.Process(ctx, card)
	return card.Val(), err
}

func errString(err error) string {
	if err == nil {
		return "no count"
	}
	return err.Error()
}
