#include "engine/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace tps {

TEST(KvBlockPool, AllocatesUntilEmptyAndReleasesBack) {
  KvBlockPool pool(3);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(pool.used(), 3);
  pool.release(1);
  EXPECT_EQ(pool.available(), 1);
  EXPECT_EQ(pool.allocate(), 1);
}

TEST(KvBlockPool, PrefixHashChainsOnTheParent) {
  std::vector<int32_t> a{1, 2, 3, 4}, b{1, 2, 3, 5};
  EXPECT_EQ(block_prefix_hash(0, a), block_prefix_hash(0, a));
  EXPECT_NE(block_prefix_hash(0, a), block_prefix_hash(0, b));
  EXPECT_NE(block_prefix_hash(7, a), block_prefix_hash(8, a));
}

TEST(KvBlockPool, PublishedBlocksAreSharedByRefcount) {
  KvBlockPool pool(4);
  int32_t b = pool.allocate();
  EXPECT_EQ(pool.lookup(42), -1);
  EXPECT_TRUE(pool.publish(b, 42));
  EXPECT_TRUE(pool.is_published(b));
  EXPECT_EQ(pool.lookup(42), b);
  EXPECT_EQ(pool.refcount(b), 2);
  pool.release(b);
  pool.release(b);
  // Unreferenced but cached: still found, and counted as available.
  EXPECT_EQ(pool.available(), 4);
  EXPECT_EQ(pool.cached(), 1);
  EXPECT_EQ(pool.lookup(42), b);
  EXPECT_EQ(pool.available(), 3);
  pool.release(b);
}

TEST(KvBlockPool, DuplicatePrefixStaysPrivate) {
  KvBlockPool pool(2);
  int32_t a = pool.allocate(), b = pool.allocate();
  EXPECT_TRUE(pool.publish(a, 9));
  EXPECT_FALSE(pool.publish(b, 9));
  EXPECT_FALSE(pool.is_published(b));
  pool.release(b);
  EXPECT_EQ(pool.allocate(), b);  // went back to the plain free list
}

TEST(KvBlockPool, EvictsLeastRecentlyReleasedCachedBlockFirst) {
  KvBlockPool pool(3);
  int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  pool.publish(a, 1);
  pool.publish(b, 2);
  pool.publish(c, 3);
  pool.release(b);
  pool.release(a);
  pool.release(c);
  // b was released first, so it goes first; its hash is forgotten.
  EXPECT_EQ(pool.allocate(), b);
  EXPECT_EQ(pool.lookup(2), -1);
  // A lookup refreshes nothing in LRU order but takes the block out of it.
  EXPECT_EQ(pool.lookup(1), a);
  EXPECT_EQ(pool.allocate(), c);
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(pool.lookup(3), -1);
  EXPECT_EQ(pool.refcount(a), 1);
}

}  // namespace tps
