// What a user's object gets from the selector: a static instance and every member instantiated.
// tests/runtime_select.rs builds this under each C++ standard with -fno-exceptions -fno-rtti and
// checks the object's symbols: no global constructor or destructor registration, no guard
// variables, no allocation, no exception machinery.
#include "orion_select.h"

template class orion_select_v1::BasicSelector<128>;

static orion_select_v1::Selector g_selector;

int orion_select_probe(const orion_select_v1::Key& key, void* stream) {
  orion_select_v1::Plan p = g_selector.begin(key, 3, stream, false);
  g_selector.end(p, stream, true);
  return p.variant;
}
