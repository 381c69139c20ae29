/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: a shared object without the entry symbol. */
int not_a_plugin(void);
int not_a_plugin(void)
{
	return 1;
}
