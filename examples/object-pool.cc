// object-pool.cc - SyncTools' ObjectPool example on <jpsync.hpp>:
// jpsync::object_pool<Bullet> hands out Bullets constructed in place in a
// jp_pool_t.  Prints nothing, as the original; exits 0 when the pool gave a
// Bullet (the original ignores that; here it is the example's check).
#include <jpsync.hpp>

struct Bullet
{
    float x, y, vx, vy;
};

int main()
{
    jpsync::object_pool<Bullet> pool{/*initial*/ 4096};
    Bullet* b = pool.acquire();
    if (b)
    {
        // initialise and use bullet ...
        pool.release(b);
    }
    return b ? 0 : 1;
}
