/* SPDX-License-Identifier: GPL-2.0-only */
/* The table of configuration keys, a key a line: "name<TAB>default", for
 * check_docs.py to hold the file and the man pages against. */
#include <stdio.h>

#include "config.h"

int main(void)
{
    for (size_t i = 0; i < config_keys_n; i++)
        printf("%s\t%s\n", config_keys[i].name, config_keys[i].def);
    return 0;
}
