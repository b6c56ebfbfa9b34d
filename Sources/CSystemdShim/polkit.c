#include "CSystemdPolkit.h"
#include <errno.h>
#include <stdlib.h>

// One question in flight: its callback must run exactly once, whether polkit answers, the call
// times out, or the connection goes away first (the slot's destroy callback).
struct polkit_check {
    fetchd_polkit_fn done;
    void *context;
    int answered;
};

static void finish(struct polkit_check *check, int answer, const char *name, const char *text) {
    if (check->answered) return;
    check->answered = 1;
    check->done(check->context, answer, name, text);
}

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct polkit_check *check = userdata;
    const sd_bus_error *error = sd_bus_message_get_error(reply);
    if (error) {
        finish(check, FETCHD_POLKIT_NO_ANSWER, error->name, error->message);
        return 0;
    }
    int authorized = 0, challenge = 0;
    // (bba{ss}): is_authorized, is_challenge, details (not needed).
    int r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
    if (r >= 0) r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
    if (r < 0) {
        finish(check, FETCHD_POLKIT_NO_ANSWER, NULL, "polkit's answer could not be read");
        return 0;
    }
    finish(check, authorized ? FETCHD_POLKIT_AUTHORIZED : challenge ? FETCHD_POLKIT_CHALLENGE : FETCHD_POLKIT_NOT_AUTHORIZED,
           NULL, NULL);
    return 0;
}

static void on_destroy(void *userdata) {
    struct polkit_check *check = userdata;
    finish(check, FETCHD_POLKIT_NO_ANSWER, NULL, "the bus connection closed before polkit answered");
    free(check);
}

int fetchd_polkit_check(sd_bus *bus, const char *sender, const char *action_id, int interactive,
                        uint64_t timeout_usec, fetchd_polkit_fn done, void *context) {
    sd_bus_message *call = NULL;
    int r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
    // The subject is the caller's bus connection: polkit learns its process and uid from the
    // bus, so the answer cannot be about anyone else. Flags: 1 allows user interaction.
    if (r >= 0) r = sd_bus_message_append(call, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", sender, action_id, 0,
                                          (uint32_t)(interactive ? 1 : 0), "");
    if (r >= 0 && interactive) r = sd_bus_message_set_allow_interactive_authorization(call, 1);
    struct polkit_check *check = NULL;
    if (r >= 0) {
        check = calloc(1, sizeof *check);
        if (!check) r = -ENOMEM;
    }
    sd_bus_slot *slot = NULL;
    if (r >= 0) {
        check->done = done;
        check->context = context;
        r = sd_bus_call_async(bus, &slot, call, on_reply, check, timeout_usec);
    }
    sd_bus_message_unref(call);
    if (r < 0) {
        free(check);
        return r;
    }
    // The slot belongs to the connection; it frees the question after its answer or with the
    // connection, calling `done` first if nothing did.
    sd_bus_slot_set_destroy_callback(slot, on_destroy);
    sd_bus_slot_set_floating(slot, 1);
    return 0;
}
