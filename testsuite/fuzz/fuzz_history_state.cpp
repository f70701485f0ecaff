// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the loader of the plugin's idle-node history state
// file (flexco_history.state under StateSaveLocation, read at every
// slurmctld start).  A torn write, a full disk or a hand edit can leave
// anything there.  Checks: no crash, and a file that loads saves to a
// text that loads again to the same text (the state survives a restart).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/capi_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char err[256];
  // The plugin's defaults: a day averaged, one sample every 5 minutes.
  flexco_histories_t* h = flexco_histories_load(reinterpret_cast<const char*>(data), size, 86400,
                                                300, err, sizeof err);
  if (h == nullptr) return 0;
  char* text = flexco_histories_save(h);
  if (text == nullptr) abort();
  flexco_histories_t* again = flexco_histories_load(text, strlen(text), 86400, 300, err,
                                                    sizeof err);
  if (again == nullptr) abort();
  char* text2 = flexco_histories_save(again);
  if (text2 == nullptr || strcmp(text, text2) != 0) abort();
  free(text2);
  free(text);
  flexco_histories_free(again);
  flexco_histories_free(h);
  return 0;
}
