"""model-mutex.py - an exhaustive model of jp_mutex's plain-mode protocol
(lib/sync/mutex.c), under x86-TSO.

The word is two bytes, LOCKED (bit 1 here) and SLEEPERS (bit 2).  Each
thread has a FIFO store buffer, where only unlock_store's byte store goes;
a read-modify-write drains its own buffer first; membarrier drains every
buffer.  The futex queue is explicit; naps and timed waits end at any
moment.  Each configuration is a list of scripts of lock, timedlock,
trylock and unlock, one per thread; every interleaving is explored.

Checked: at most one owner; no misuse report from these valid scripts; no
end state with a thread that cannot move (a lost wake-up); the word is 0
at the end.  Exit status 0 when every configuration passes.

With --mutant=NAME a part of the protocol is taken out, and the model must
then fail (exit status 0 when it does, 1 when it still passes): no-nap
(the first sleep after marking a word that was LOCKED alone is unbounded),
no-fence (membarrier before a second sleep left out), no-handover (a
timed lock that gives up unfenced wakes nobody); --mutants lists them.
tests/check-models.sh runs every way.  Keep the model in step with
mutex.c: lock_slow, give_up_unfenced, try_lock, unlock_store, unlock_rmw,
wake_sleeper.
"""
import sys
from collections import deque

L, S = 1, 2                 # bit encoding of (b0, b1) as int: b0 -> 1, b1 -> 2
BOTH = 3
MUTANTS = ('no-nap', 'no-fence', 'no-handover')
MUTANT = None
for a in sys.argv[1:]:
    if a == '--mutants':
        print(' '.join(MUTANTS))
        sys.exit(0)
    if a.startswith('--mutant='):
        MUTANT = a.split('=', 1)[1]
        if MUTANT not in MUTANTS:
            sys.exit('model-mutex.py: unknown mutant %s' % MUTANT)
    else:
        sys.exit('usage: model-mutex.py [--mutants | --mutant=%s]' % '|'.join(MUTANTS))
# A membarrier that fails (it does not, once registered): lock_slow then
# keeps every sleep a nap.  Always explored.
FENCE_MAY_FAIL = True

def word(mem, buf):
    v = mem
    for (byte, val) in buf:            # own buffer forwards
        bit = L if byte == 0 else S
        v = (v | bit) if val else (v & ~bit)
    return v

# thread state: (script_idx, pc, v, unfenced, napped, r, buf, waitinfo)
# pc strings; buf tuple of (byte,val); waitinfo: None or (nap, timed)
def init_thread():
    return (0, 'start', 0, 0, 0, 0, (), None)

class Bad(Exception): pass

def successors(state, scripts):
    mem, threads, owner = state
    out = []
    n = len(threads)
    for i in range(n):
        t = threads[i]
        si, pc, v, unf, nap, r, buf, wi = t
        # store-buffer flush (independent of pc)
        if buf:
            (byte, val) = buf[0]
            bit = L if byte == 0 else S
            nm = (mem | bit) if val else (mem & ~bit)
            ts = list(threads); ts[i] = (si, pc, v, unf, nap, r, buf[1:], wi)
            out.append(('flush%d' % i, (nm, tuple(ts), owner), None))
        if si >= len(scripts[i]):
            continue
        op = scripts[i][si]
        def put(nt, nmem=None, nowner=None, label='', extra=None):
            ts = list(threads); ts[i] = nt
            out.append((('T%d:%s:%s' % (i, op, label)),
                        (mem if nmem is None else nmem, tuple(ts),
                         owner if nowner is None else nowner), extra))
        def drained():
            return word(mem, buf)   # value after draining own buffer
        def done(nextsi, nmem=None, nowner=None, label='', extra=None):
            put((nextsi, 'start', 0, 0, 0, 0, () if nmem is not None else buf, None),
                nmem, nowner, label, extra)
        def take(label, nmem, extra=None):
            if owner is not None:
                raise Bad('two owners: %d and %d (%s)' % (owner, i, label))
            put((si, 'own', 0, 0, 0, 0, (), None), nmem, i, label, extra)
        timed = op in ('timedlock',)
        if op in ('lock', 'timedlock'):
            if pc == 'start':
                m = drained()
                if m == 0:
                    take('fast', L)
                else:
                    put((si, 'L1', 0, 0, 0, 0, (), None), m, label='fastfail')
            elif pc == 'L1':
                if timed:
                    # The deadline had passed: one attempt (try_lock).
                    if not (mem & L):
                        take('past-deadline-take', mem | L)
                    else:
                        put((si + 2, 'start', 0, 0, 0, 0, (), None), label='ETIMEDOUT-early')
                put((si, 'spin1', 0, 0, 0, 0, (), None), label='notpast')
            elif pc in ('spin1', 'spin2'):
                want = L if pc == 'spin1' else BOTH
                after = 'xchg1' if pc == 'spin1' else 'xchg2'
                put((si, after, v, unf, nap, r, (), None), label='spin-stop')
                if not (mem & L):
                    take('spin-take', want | (mem & S))
            elif pc in ('xchg1', 'xchg2'):
                old = mem
                if not (old & L):
                    take('xchg-take', BOTH)
                else:
                    put((si, 'L4', old, unf, nap, r, (), None), BOTH, label='mark old=%d' % old)
            elif pc == 'L4':
                if v == L:
                    unf, nap = 1, 0
                if unf and nap and MUTANT == 'no-fence':
                    put((si, 'L4b', v, 0, nap, r, (), None), label='no-fence')
                elif unf and nap:
                    # fence
                    ts = threads
                    nm = mem
                    for j in range(n):
                        nm = word(nm, threads[j][6])
                    ts = tuple((tt[0], tt[1], tt[2], tt[3], tt[4], tt[5], (), tt[7]) for tt in threads)
                    nt = (si, 'L4b', v, 0, nap, r, (), None)
                    ts = list(ts); ts[i] = nt
                    out.append(('T%d:fence' % i, (nm, tuple(ts), owner), None))
                    if FENCE_MAY_FAIL:
                        put((si, 'L4b', v, unf, nap, r, (), None), label='fence-failed')
                else:
                    put((si, 'L4b', v, unf, nap, r, (), None), label='nofence')
            elif pc == 'L4b':
                # futex_wait(BOTH)
                if mem != BOTH:
                    put((si, 'L5', v, unf, nap, 0, (), None), label='EAGAIN')
                else:
                    napping = unf and MUTANT != 'no-nap'
                    put((si, 'wait', v, unf, nap, 0, (), (napping, timed)),
                        label='sleep nap=%d' % napping)
            elif pc == 'wait':
                napping, tmd = wi
                if napping:
                    put((si, 'L5', v, unf, nap, 0, (), None), label='nap-end')
                if tmd:
                    put((si, 'L5', v, unf, nap, 1, (), None), label='timeout')
            elif pc == 'woken':
                put((si, 'L5', v, unf, nap, 0, (), None), label='resume')
            elif pc == 'L5':
                nap = unf
                if r == 1:
                    if unf:
                        put((si, 'G1', v, unf, nap, r, (), None), label='giveup')
                    else:
                        put((si + 2, 'start', 0, 0, 0, 0, (), None), label='ETIMEDOUT')
                else:
                    put((si, 'spin2', v, unf, nap, r, (), None), label='again')
            elif pc == 'G1' and MUTANT == 'no-handover':
                put((si + 2, 'start', 0, 0, 0, 0, (), None), label='ETIMEDOUT-no-handover')
            elif pc == 'G1':
                # give_up_unfenced: clear SLEEPERS, wake one if it was set.
                m = mem
                ts = list(threads)
                ts[i] = (si, 'G3', v, unf, nap, r, (), None) if m & S else (si + 2, 'start', 0, 0, 0, 0, (), None)
                out.append(('T%d:giveup-fetch_and old=%d' % (i, m), (m & ~S, tuple(ts), owner), None))
            elif pc == 'G3':
                out.extend(wake_one(state, i, (si + 2, 'start', 0, 0, 0, 0, (), None)))
            elif pc == 'own':
                done(si + 1)
        elif op == 'trylock':
            m = drained()
            if not (m & L):
                if owner is not None:
                    raise Bad('two owners (trylock)')
                ts = list(threads); ts[i] = (si + 1, 'start', 0, 0, 0, 0, (), None)
                out.append(('T%d:trylock-ok' % i, (L | (m & S), tuple(ts), i), None))
            else:
                ts = list(threads); ts[i] = (si + 2, 'start', 0, 0, 0, 0, (), None)
                out.append(('T%d:trylock-busy' % i, (m, tuple(ts), owner), None))
        elif op == 'unlock':
            if pc == 'start':
                vv = word(mem, buf)
                if vv != L:
                    put((si, 'UR', vv, 0, 0, 0, buf, None), label='load v=%d' % vv)
                else:
                    put((si, 'U1', vv, 0, 0, 0, buf, None), label='load v=L')
            elif pc == 'UR':
                old = word(mem, buf)
                nowner = None
                if owner != i:
                    raise Bad('unlock by non-owner in model')
                ts = list(threads)
                if old == BOTH:
                    ts[i] = (si, 'UW', 0, 0, 0, 0, (), None)
                elif old == L:
                    ts[i] = (si + 1, 'start', 0, 0, 0, 0, (), None)
                else:
                    raise Bad('MISUSE not locked: old=%d' % old)
                out.append(('T%d:unlock-xchg old=%d' % (i, old), (0, tuple(ts), -1), None))
            elif pc == 'UW':
                out.extend(wake_one(state, i, (si + 1, 'start', 0, 0, 0, 0, (), None)))
            elif pc == 'U1':
                ts = list(threads)
                ts[i] = (si, 'U2', v, 0, 0, 0, buf + ((0, 0),), None)
                out.append(('T%d:unlock-store' % i, (mem, tuple(ts), -1), None))
            elif pc == 'U2':
                b1 = word(mem, buf) & S
                if b1:
                    put((si, 'U3', v, 0, 0, 0, buf, None), label='sees S')
                else:
                    put((si + 1, 'start', 0, 0, 0, 0, buf, None), label='S clear')
            elif pc == 'U3':
                m = word(mem, buf)
                ts = list(threads)
                ts[i] = (si, 'UW', 0, 0, 0, 0, (), None) if m & S else (si + 1, 'start', 0, 0, 0, 0, (), None)
                out.append(('T%d:fetch_and old=%d' % (i, m), (m & ~S, tuple(ts), owner), None))
    return out

def wake_one(state, i, nt):
    mem, threads, owner = state
    outs = []
    waiters = [j for j, t in enumerate(threads) if t[1] == 'wait']
    if not waiters:
        ts = list(threads); ts[i] = nt
        outs.append(('T%d:wake(none)' % i, (mem, tuple(ts), owner), None))
    for j in waiters:
        ts = list(threads); ts[i] = nt
        tj = ts[j]
        ts[j] = (tj[0], 'woken', tj[2], tj[3], tj[4], tj[5], tj[6], None)
        outs.append(('T%d:wake(T%d)' % (i, j), (mem, tuple(ts), owner), None))
    return outs

def norm(state):
    mem, threads, owner = state
    return (mem, threads, None if owner == -1 else owner)

def explore(scripts):
    start = (0, tuple(init_thread() for _ in scripts), None)
    seen = {start: None}
    q = deque([start])
    final_words = {}
    while q:
        st = q.popleft()
        try:
            succ = successors(st, scripts)
        except Bad as e:
            return ('BAD', str(e), trace(seen, st))
        if not succ:
            mem, threads, owner = st
            unfinished = [j for j, t in enumerate(threads) if t[0] < len(scripts[j])]
            if unfinished:
                return ('LOST-WAKE', [threads[j][1] for j in unfinished], trace(seen, st), mem)
            final_words[mem] = trace(seen, st)
            continue
        for (lab, ns, _) in succ:
            ns = norm(ns)
            if ns not in seen:
                seen[ns] = (st, lab)
                q.append(ns)
    return ('OK', len(seen), {k: (v if k else None) for k, v in final_words.items()})

def trace(seen, st):
    out = []
    while seen[st] is not None:
        st, lab = seen[st]
        out.append(lab)
    return out[::-1]

CONFIGS = [
    [['lock', 'unlock'], ['lock', 'unlock'], ['lock', 'unlock']],
    [['lock', 'unlock'], ['timedlock', 'unlock'], ['lock', 'unlock']],
    [['lock', 'unlock', 'lock', 'unlock'], ['timedlock', 'unlock'], ['lock', 'unlock']],
    [['lock', 'unlock', 'lock', 'unlock'], ['lock', 'unlock'], ['lock', 'unlock']],
    [['lock', 'unlock'], ['timedlock', 'unlock', 'timedlock', 'unlock'], ['lock', 'unlock']],
    [['lock', 'unlock'], ['timedlock', 'unlock'], ['timedlock', 'unlock'], ['lock', 'unlock']],
    [['lock', 'unlock', 'lock', 'unlock'], ['trylock', 'unlock', 'lock', 'unlock'], ['lock', 'unlock']],
    [['lock', 'unlock'], ['lock', 'unlock'], ['lock', 'unlock'], ['lock', 'unlock']],
]


def main():
    failed = 0
    for sc in CONFIGS:
        res = explore(sc)
        if res[0] == 'OK' and sorted(res[2]) == [0]:
            print('ok', sc, '(%d states)' % res[1])
            continue
        failed += 1
        if res[0] == 'OK':
            print('FAIL', sc, 'word at the end:', sorted(res[2]))
            for k, tr in res[2].items():
                if k:
                    print('   word', k, 'after', tr)
        else:
            print('FAIL', res[0], sc, res[1])
            print('   trace:', res[2])
        if MUTANT:
            break       # one failure is the answer
    if MUTANT:
        print('mutant %s: %s' % (MUTANT, 'caught' if failed else 'NOT caught'))
        return 0 if failed else 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
