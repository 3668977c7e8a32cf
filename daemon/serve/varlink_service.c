/* SPDX-License-Identifier: GPL-2.0-only */
#include "varlink_service.h"

#include <string.h>

#include "macro.h"
#include "varlink_frame.h"

static const char service_description[] =
    "# The Varlink Service Interface is provided by every varlink service. It\n"
    "# describes the service and the interfaces it implements.\n"
    "interface org.varlink.service\n\n"
    "method GetInfo() -> (\n  vendor: string,\n  product: string,\n  version: string,\n"
    "  url: string,\n  interfaces: []string\n)\n\n"
    "method GetInterfaceDescription(interface: string) -> (description: string)\n\n"
    "error InterfaceNotFound (interface: string)\n\n"
    "error MethodNotFound (method: string)\n\n"
    "error MethodNotImplemented (method: string)\n\n"
    "error InvalidParameter (parameter: string)\n\n"
    "error PermissionDenied ()\n\n"
    "error ExpectedMore ()\n";

struct service {
    const struct vl_interface *interfaces;
    size_t n;
};

/* One per process: a daemon has one service. */
static struct service service;

static json_t *get_info(void *userdata, const struct peer *peer, json_t *params)
{
    const struct service *sv = userdata;
    json_t *names = json_array();

    json_array_append_new(names, json_string("org.varlink.service"));
    for (size_t i = 0; i < sv->n; i++)
        json_array_append_new(names, json_string(sv->interfaces[i].name));
    return vl_reply_new(json_pack("{s:s, s:s, s:s, s:s, s:o}", "vendor", "offcpud", "product",
                                  "offcpud", "version", OFFCPUD_VERSION, "url",
                                  "https://varlink.org", "interfaces", names),
                        false);
}

static json_t *get_interface_description(void *userdata, const struct peer *peer, json_t *params)
{
    const struct service *sv = userdata;
    const char *name = json_string_value(json_object_get(params, "interface"));
    const char *text = strcmp(name, "org.varlink.service") == 0 ? service_description : NULL;

    for (size_t i = 0; i < sv->n && !text; i++)
        if (strcmp(name, sv->interfaces[i].name) == 0)
            text = sv->interfaces[i].description;
    if (!text)
        return vl_error_new("org.varlink.service.InterfaceNotFound",
                            json_pack("{s:s}", "interface", name));
    return vl_reply_new(json_pack("{s:s}", "description", text), false);
}

static const struct vl_param no_params[] = {{NULL, 0, false}};
static const struct vl_param describe_params[] = {{"interface", VL_STRING, true}, {NULL, 0, false}};

static const struct vl_method methods[] = {
    {"org.varlink.service.GetInfo", no_params, ACCESS_NONE, get_info},
    {"org.varlink.service.GetInterfaceDescription", describe_params, ACCESS_NONE,
     get_interface_description},
};

int varlink_service_bind(struct vl_server *s, const struct vl_interface *interfaces, size_t n)
{
    service = (struct service){.interfaces = interfaces, .n = n};
    return vl_server_bind(s, methods, ARRAY_SIZE(methods), &service);
}
