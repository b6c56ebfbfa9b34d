// Method calls built in memory and never sent, read back as the daemon reads a call it
// received: the D-Bus fuzz target builds its inputs with these (sd-bus has no public call that
// reads raw wire bytes into a message). A draft's bus is a connection on a socketpair that is
// started (sd-bus makes no message on a bus never started) and never used.
#ifndef FETCHD_CSYSTEMD_DRAFT_H
#define FETCHD_CSYSTEMD_DRAFT_H

#include <systemd/sd-bus.h>

/// A method call `member` of org.fetchd.Fetchd1 (`*message`, to unref), with an empty body, on a
/// bus of its own. Returns a negative errno on failure.
int fetchd_bus_draft_new(const char *member, sd_bus_message **message);

/// Appends one value of the basic `type` (`s`, `o` and `g` take a string, `h` a descriptor to
/// duplicate, the others a pointer to a value of the type's width). Returns a negative errno
/// when sd-bus refuses it.
int fetchd_bus_draft_append_string(sd_bus_message *message, char type, const char *value);
int fetchd_bus_draft_append_fixed(sd_bus_message *message, char type, const void *value);

/// Opens a container (`a`, `v`, `r`, `e`) of `contents`; closes the one opened last.
int fetchd_bus_draft_open(sd_bus_message *message, char type, const char *contents);
int fetchd_bus_draft_close(sd_bus_message *message);

/// Seals the message and rewinds it, so that it reads as a received call from its first value.
int fetchd_bus_draft_seal(sd_bus_message *message);

#endif
