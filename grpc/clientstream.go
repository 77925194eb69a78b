package sluicegrpc

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// MaxReplayed is how many messages [StreamClientInterceptor] keeps to send
// again: a stream whose client has sent more before receiving anything is
// no longer retried.
const MaxReplayed = 16

// StreamClientInterceptor returns a client interceptor that honours the
// retry delay servers give with a refusal of a streaming call, as
// [UnaryClientInterceptor] does for unary calls, with the same options:
// a stream that ends with codes.ResourceExhausted and a retry delay (as
// [Limiter.StreamServerInterceptor] refuses one, before its handler runs)
// before it received anything is started again after that delay, plus
// jitter, at most [WithMaxRetries] times, within [WithMaxWait] and the
// stream's deadline; codes.Unavailable likewise for the methods
// [WithIdempotent] names.
//
// The refusal shows where a stream's errors do: in RecvMsg. The
// interceptor keeps the messages the client sends until the stream
// receives its first message (copies of protocol buffer messages, at most
// [MaxReplayed]), and sends them again, and CloseSend if the client had
// called it, on the new stream, so the client sees one stream that
// answers late. While a refused stream can still be sent again, SendMsg
// keeps the message and returns nil where the stream would return io.EOF.
//
// A stream is sent again only before anything commits it: its first
// received message, a call of Header (the client has seen the server's
// header metadata), or more than MaxReplayed messages sent. Then its
// outcome, a refusal included, is the client's as it is. A wait that
// would exceed the bounds ends the stream with a [*RefusedError], as for
// a unary call. Invalid options are an error wrapping
// sluice.ErrInvalidConfig.
func StreamClientInterceptor(opts ...ClientOption) (grpc.StreamClientInterceptor, error) {
	c, err := newClientConfig(opts)
	if err != nil {
		return nil, err
	}
	return c.interceptStream, nil
}

// interceptStream is the stream interceptor.
func (c *clientConfig) interceptStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	start := func() (grpc.ClientStream, error) { return streamer(ctx, desc, cc, method, opts...) }
	s := &retryStream{c: c, ctx: ctx, start: start, method: method}
	cs, err := s.start()
	if err != nil {
		if err = s.again(err); err != nil {
			return nil, err
		}
		return s, nil
	}
	s.cs = cs
	return s, nil
}

// retryStream is a client stream that is started again after a refusal
// with a retry delay, until something commits it. It is safe for one
// goroutine sending and another receiving at once.
type retryStream struct {
	c      *clientConfig
	ctx    context.Context
	start  func() (grpc.ClientStream, error)
	method string

	mu        sync.Mutex // guards the fields below; held while a new stream is brought level
	cs        grpc.ClientStream
	committed bool
	sent      []any // the messages sent, while not committed
	closed    bool  // CloseSend was called
	attempt   int
	waited    time.Duration
}

// current returns the stream in use and whether it is committed.
func (s *retryStream) current() (grpc.ClientStream, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs, s.committed
}

// commit stops the stream from being sent again.
func (s *retryStream) commit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed, s.sent = true, nil
}

// SendMsg sends m, keeping a copy to send again while not committed.
func (s *retryStream) SendMsg(m any) error {
	s.mu.Lock()
	keep := !s.committed && len(s.sent) < MaxReplayed
	if keep {
		s.sent = append(s.sent, clone(m))
	} else {
		s.committed, s.sent = true, nil
	}
	cs := s.cs
	s.mu.Unlock()
	err := cs.SendMsg(m)
	if keep && errors.Is(err, io.EOF) {
		return nil // the stream ended: RecvMsg sees why, and may send m again
	}
	return err
}

// CloseSend closes the sending side, now and on any stream started again.
func (s *retryStream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	cs := s.cs
	s.mu.Unlock()
	return cs.CloseSend()
}

// RecvMsg receives a message, starting the stream again after a refusal
// that allows it.
func (s *retryStream) RecvMsg(m any) error {
	for {
		cs, committed := s.current()
		err := cs.RecvMsg(m)
		switch {
		case err == nil:
			s.commit()
			return nil
		case committed || errors.Is(err, io.EOF):
			return err
		}
		if err := s.again(err); err != nil {
			s.commit()
			return err
		}
	}
}

// Header returns the header metadata, and commits the stream: the client
// has seen what the server answered.
func (s *retryStream) Header() (metadata.MD, error) {
	s.commit()
	cs, _ := s.current()
	return cs.Header()
}

// Trailer returns the trailer metadata of the stream in use.
func (s *retryStream) Trailer() metadata.MD {
	cs, _ := s.current()
	return cs.Trailer()
}

// Context returns the context of the stream in use.
func (s *retryStream) Context() context.Context {
	cs, _ := s.current()
	return cs.Context()
}

// again waits out the refusal err, as the client's options allow, and
// starts the stream again, sending what the client had sent: or returns
// the error to end the stream with.
func (s *retryStream) again(refusal error) error {
	for {
		s.attempt++
		wait, err := s.c.next(s.ctx, s.method, refusal, s.attempt, s.waited)
		if err != nil {
			return err
		}
		if err := s.c.pause(s.ctx, wait); err != nil {
			return err
		}
		s.waited += wait
		cs, err := s.start()
		if err != nil {
			refusal = err // starting failed: wait that out too, if it allows
			continue
		}
		s.level(cs)
		return nil
	}
}

// level makes cs the stream in use, once it has been sent what the client
// sent. A send that fails ends the new stream early: RecvMsg then sees
// why.
func (s *retryStream) level(cs grpc.ClientStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cs = cs
	for _, m := range s.sent {
		if cs.SendMsg(m) != nil {
			return
		}
	}
	if s.closed {
		_ = cs.CloseSend()
	}
}

// clone returns a copy of a protocol buffer message, which its sender may
// change once sent; any other message as it is.
func clone(m any) any {
	if pm, ok := m.(proto.Message); ok {
		return proto.Clone(pm)
	}
	return m
}
